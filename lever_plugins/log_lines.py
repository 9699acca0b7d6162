"""The one-line summaries the plugins write into the engine log (parsed by workers/dynk_log.py).

Counters are cumulative since the engine started, so the last line of a log holds
the totals and a lost line loses nothing. Format: `lever_plugins <name>: key=value ...`.
"""

from __future__ import annotations

from lever_plugins.controller import DynamicK
from lever_plugins.pad_policy import PadStats

PREFIX = "lever_plugins"


def _pairs(values: dict[str, object]) -> str:
    return " ".join(f"{key}={value}" for key, value in values.items())


def pad_fields(stats: PadStats) -> dict[str, object]:
    return {
        "drafts": stats.drafts,
        "draft_tokens": stats.draft_tokens,
        "padded_tokens": stats.padded_tokens,
        "truncated_tokens": stats.truncated_tokens,
    }


def kpad_line(steps: int, k: int, pad_id: int, stats: PadStats) -> str:
    return f"{PREFIX} kpad: " + _pairs({"steps": steps, "k": k, "pad_id": pad_id, **pad_fields(stats)})


def dynk_line(controller: DynamicK, stats: PadStats) -> str:
    per_k = {f"K{k}": n for k, n in controller.steps_by_k.items()}
    return f"{PREFIX} dynk: " + _pairs(
        {
            "steps": controller.steps,
            **per_k,
            "k": controller.last_k,
            "p_accept": f"{controller.estimate.p_accept:.4f}",
            "batch": controller.last_batch_size,
            **pad_fields(stats),
        }
    )

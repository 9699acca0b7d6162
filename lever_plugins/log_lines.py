"""The one-line summaries the plugins write into the engine log (parsed by workers/signals/dynk_log.py).

Counters are cumulative since the engine started, so the last line of a log holds
the totals and a lost line loses nothing. Format: `lever_plugins <name>: key=value ...`.
"""

from __future__ import annotations

from lever_plugins.controller import DynamicK
from lever_plugins.pad_policy import PadStats
from lever_plugins.step_tally import StepTally

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


def tally_fields(tally: StepTally) -> dict[str, object]:
    """K<k>_drafts (drafts verified) and K<k>_<mode> (forward passes by runtime mode); K0: no drafts."""
    fields: dict[str, object] = {f"K{k}_drafts": n for k, n in tally.drafts_by_k.items()}
    for k, modes in tally.modes_by_k.items():
        fields.update({f"K{k}_{mode}": n for mode, n in modes.items()})
    return fields


def kpad_line(steps: int, k: int, pad_id: int, stats: PadStats) -> str:
    return f"{PREFIX} kpad: " + _pairs({"steps": steps, "k": k, "pad_id": pad_id, **pad_fields(stats)})


def dynk_line(
    controller: DynamicK, stats: PadStats, tally: StepTally | None = None, idle: bool = False
) -> str:
    """Decisions per K (K<k>=steps), controller state, shaping counters, per-K tally; idle=1 on a flush."""
    per_k = {f"K{k}": n for k, n in controller.steps_by_k.items()}
    return f"{PREFIX} dynk: " + _pairs(
        {
            "steps": controller.steps,
            **per_k,
            "k": controller.last_k,
            "p_accept": f"{controller.estimate.p_accept:.4f}",
            "batch": controller.last_batch_size,
            **pad_fields(stats),
            **(tally_fields(tally) if tally is not None else {}),
            "idle": int(idle),
        }
    )

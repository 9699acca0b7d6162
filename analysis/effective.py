"""What the engines of two compared sides actually ran with, and where a cell ran other than it asked. Pure.

Every cell stores its engine's effective configuration, read from the engine's log
(workers/engine/log.py: the engine_* columns of EFFECTIVE). A ratio of two sides is the lever's
effect only where nothing else differed; `differences` names what else did, e.g.
"also differs: model runner V2 vs V1; async scheduling off vs on".

What a lever may change itself (LEVER_CHANGES, or from its config: `lever_changes`) is not a
difference; it excuses a field only against another lever (the same lever on two stores, as in
`grid compare`, is compared field by field):
  - van: nothing (the reference);
  - van_noasync: async scheduling (its whole point);
  - w4a4 (any quantized lever): the NVFP4 kernel (van has none; which one ran is `asked_vs_ran`'s);
  - suffix, bestkpad, dynk (any drafting lever): the largest CUDA-graph capture size (vLLM sizes the
    captures to the draft length 1 + K).
Async scheduling is *not* excused for the drafting levers: vLLM turns it off under suffix decoding
while van runs with it on, so a suffix x van carries the scheduling effect too and says so. Nor is
the CUDA-graph mode: suffix, bestkpad and dynk all ask FULL_AND_PIECEWISE, vLLM's default for van,
so a mode that differs is vLLM overriding the request, not the lever. The model runner and the vLLM
version are never a lever's.

Unknown values (None / NaN: an older store, or a log line vLLM no longer writes) are no difference
when both sides lack them, and 'unknown' when only one side knows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

# Column -> its name in words, in the order the differences are said.
EFFECTIVE = {
    "engine_model_runner": "model runner",
    "engine_async_scheduling": "async scheduling",
    "engine_cudagraph_mode": "CUDA-graph mode",
    "engine_max_capture_size": "max CUDA-graph capture size",
    "engine_nvfp4_kernel": "NVFP4 kernel",
    "engine_log_version": "vLLM version",
}
ASYNC, RUNNER, KERNEL = "engine_async_scheduling", "engine_model_runner", "engine_nvfp4_kernel"
CAPTURE = "engine_max_capture_size"
LEVER_CHANGES: dict[str, frozenset[str]] = {
    "van": frozenset(),
    "van_noasync": frozenset({ASYNC}),
    "w4a4": frozenset({KERNEL}),
    "suffix": frozenset({CAPTURE}),
    "bestkpad": frozenset({CAPTURE}),
    "dynk": frozenset({CAPTURE}),
}
FIXED_K = "fixed K in effect"


@dataclass(frozen=True)
class Difference:
    """One field whose known values differ between side A (the value) and side B (the reference)."""

    column: str
    a: tuple[str, ...]  # the values shown, sorted; () = unknown
    b: tuple[str, ...]

    def words(self) -> str:
        """'model runner V2 vs V1' ('unknown' for a side without a value, 'V1/V2' for a mixed side)."""
        return f"{EFFECTIVE[self.column]} {'/'.join(self.a) or 'unknown'} vs {'/'.join(self.b) or 'unknown'}"


def _known(value: object) -> bool:
    if value is None or value is pd.NA:
        return False
    return not (isinstance(value, float) and math.isnan(value))


def shown(column: str, value: object) -> str:
    """A value as said: async True -> 'on', runner 'v2' -> 'V2', a capture size as an integer."""
    if column == ASYNC:
        return "on" if bool(value) else "off"
    if column == RUNNER:
        return str(value).upper()
    if column == CAPTURE and isinstance(value, int | float):
        return str(int(value))
    return str(value)


def _values(rows: Iterable[Mapping[str, Any]], column: str) -> tuple[str, ...]:
    return tuple(sorted({shown(column, r[column]) for r in rows if _known(r.get(column))}))


def lever_config(row: Mapping[str, Any]) -> dict[str, Any]:
    """The lever's own config as the cell stored it (config_json's `lever`); {} when not stored."""
    text = row.get("config_json")
    if not isinstance(text, str):
        return {}
    try:
        lever = json.loads(text).get("lever")
    except (ValueError, AttributeError):
        return {}
    return lever if isinstance(lever, dict) else {}


def lever_changes(lever: str, config: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The effective fields `lever` changes by design (module doc): from its stored config where
    there is one (quantized, spec_method, async pinned off), else LEVER_CHANGES by name."""
    if not config:
        return LEVER_CHANGES.get(lever, frozenset())
    changes = set()
    if config.get("quantized"):
        changes.add(KERNEL)
    if config.get("spec_method"):
        changes.add(CAPTURE)
    if config.get("async_scheduling") is False:
        changes.add(ASYNC)
    return frozenset(changes)


def _changes_of(rows: list[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    levers = {str(r.get("lever")) for r in rows}
    fields = (
        set().union(*(lever_changes(str(r.get("lever")), lever_config(r)) for r in rows)) if rows else set()
    )
    return levers, fields


def differences(a_rows: Iterable[Mapping[str, Any]], b_rows: Iterable[Mapping[str, Any]]) -> list[Difference]:
    """The effective fields whose known values differ between side A's cells and side B's, beyond
    what either side's lever changes by design (only where the two sides' levers differ)."""
    a, b = list(a_rows), list(b_rows)
    if not a or not b:
        return []
    levers_a, changes_a = _changes_of(a)
    levers_b, changes_b = _changes_of(b)
    excused = changes_a | changes_b if levers_a != levers_b else set()
    out = []
    for column in EFFECTIVE:
        if column in excused:
            continue
        va, vb = _values(a, column), _values(b, column)
        if va != vb and (va or vb):
            out.append(Difference(column, va, vb))
    return out


def differs_words(diffs: list[Difference]) -> str:
    """'also differs: model runner V2 vs V1; async scheduling off vs on'; '' when nothing differs."""
    return "also differs: " + "; ".join(d.words() for d in diffs) if diffs else ""


def also_differs(a_rows: Iterable[Mapping[str, Any]], b_rows: Iterable[Mapping[str, Any]]) -> str:
    """differs_words(differences(a_rows, b_rows))."""
    return differs_words(differences(a_rows, b_rows))


def ran_with(rows: Iterable[Mapping[str, Any]]) -> str:
    """What a side's engines ran with, e.g. 'async scheduling on, model runner V1' (for the van an
    'x van' is over); unknown fields are left out, and '' when none is known."""
    rows = list(rows)
    parts = []
    for column in (ASYNC, RUNNER, "engine_cudagraph_mode", "engine_log_version"):
        if values := _values(rows, column):
            parts.append(f"{EFFECTIVE[column]} {'/'.join(values)}")
    return ", ".join(parts)


def is_marlin(row: Mapping[str, Any]) -> bool:
    """An NVFP4 cell whose engine ran the checkpoint weight-only through Marlin (W4A16, Hopper)."""
    kernel = row.get(KERNEL)
    return _known(kernel) and "marlin" in str(kernel).lower()


def asked_vs_ran(row: Mapping[str, Any]) -> list[str]:
    """Where the engine ran other than the cell asked, in words: async scheduling pinned on or off by
    the lever and the log says otherwise; an NVFP4 (W4A4) checkpoint run through Marlin as W4A16."""
    out = []
    asked = lever_config(row).get("async_scheduling")
    ran = row.get(ASYNC)
    if asked is not None and _known(ran) and bool(asked) != bool(ran):
        out.append(f"asked async scheduling {shown(ASYNC, asked)}, ran {shown(ASYNC, ran)}")
    if is_marlin(row):
        out.append(f"asked W4A4, ran W4A16 ({row.get(KERNEL)}: weight-only FP4, activations bf16)")
    return out


def lever_shown(row: Mapping[str, Any]) -> str:
    """The lever as a table shows it: an NVFP4 cell run through Marlin is the W4A16 it ran
    ('W4A16 (w4a4 on Marlin)'), not W4A4; every other lever by its name."""
    lever = str(row.get("lever"))
    return f"W4A16 ({lever} on Marlin)" if is_marlin(row) else lever


def steps_by_k(row: Mapping[str, Any]) -> dict[int, int]:
    """dynk's steps per K in the cell's window (dynk_steps_by_k_json), the Ks it used only; {} unknown."""
    text = row.get("dynk_steps_by_k_json")
    if not isinstance(text, str):
        return {}
    try:
        counts = json.loads(text)
    except ValueError:
        return {}
    return {int(k): int(n) for k, n in counts.items() if n}


def fixed_k(rows: Iterable[Mapping[str, Any]]) -> int | None:
    """The one K every recorded step of every cell used, where the cells record their steps and K
    never moved (a dynamic-K lever running as fixed K, e.g. on Model Runner V2: vllm issue #51510);
    None where K moved or no cell recorded its steps."""
    used = [set(counts) for r in rows if (counts := steps_by_k(r))]
    ks = set().union(*used) if used else set()
    return ks.pop() if len(ks) == 1 else None


def fixed_k_words(k: int | None) -> str:
    """'fixed K in effect: every step K=12'; '' for None."""
    return "" if k is None else f"{FIXED_K}: every step K={k}"

"""Whether a lever has cleared the output-equivalence gate where it is used. Pure.

One rule for the analysis (analysis/final.py) and tune (experiments/decide.py):
a lever is usable for a model only if its latest verdict is 'pass' for that
model, lever and K on every corpus it is scored on, and no corpus's latest
verdict at one of those K is 'fail' (a lever that changed outputs anywhere is
not lossless). A missing verdict or 'no_reference' is no evidence that its
outputs are right, so it never counts as a pass; verdicts of other models
never count at all. van is the reference and needs none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from analysis.equivalence import FAIL, PASS
from vocab.cells import REFERENCE_LEVER

KEY = ["model", "lever", "k", "corpus"]


def latest_verdicts(equivalence: pd.DataFrame | None) -> pd.DataFrame:
    """The latest verdict per (model, lever, K, corpus) by `judged_at` (when it was reached; rows
    written before it existed sort first, by session id); within one judgement, a paired one.

    With repeats, only repeat 0's prompts have a van replicate (grid/config/expand.py:
    van_replicates), so the other repeats' cells are judged without a noise
    floor, by exact match alone, which bf16 on a GPU fails even van against van.
    The paired test is the rule wherever it ran; the unpaired verdicts of the
    same session are the fallback only where no paired one exists.
    """
    if equivalence is None or equivalence.empty:
        return pd.DataFrame(columns=[*KEY, "verdict", "reason"])
    paired = (
        equivalence["floor_cell_key"].notna()
        if "floor_cell_key" in equivalence.columns
        else pd.Series(False, index=equivalence.index)
    )
    # Session ids are names (tune stages, `session_id=` overrides), not times: "zz-old" sorts after
    # "20261202T..." though judged first. Rows without a time sort first, by session id as before.
    judged_at = (
        equivalence["judged_at"].fillna("")
        if "judged_at" in equivalence.columns
        else pd.Series("", index=equivalence.index)
    )
    ordered = equivalence.assign(_at=judged_at, _paired=paired).sort_values(
        ["_at", "session_id", "_paired"], kind="stable"
    )
    # The last row per key in that order (NaN keys equal, as groupby(dropna=False).tail(1) takes them,
    # at a fraction of its cost: the tune's simulation asks once per decision).
    return ordered.drop_duplicates(KEY, keep="last").drop(columns=["_at", "_paired"])


def parse_k_by_corpus(text: str) -> list[tuple[str, int]]:
    """'chat:4, code_edit:8' -> [('chat', 4), ('code_edit', 8)] (analysis/final.py: k_by_corpus)."""
    pairs = []
    for part in text.split(","):
        corpus, _, k = part.strip().rpartition(":")
        pairs.append((corpus, int(float(k))))
    return pairs


def gate_problems(
    latest: pd.DataFrame, model: str, lever: str, k_by_corpus: Iterable[tuple[str, int]]
) -> list[str]:
    """Why `lever` may not be used for `model` ('corpus: reason' each); empty when it cleared the gate."""
    if lever == REFERENCE_LEVER:
        return []
    pairs = [
        (corpus, 0 if k is None or (isinstance(k, float) and math.isnan(k)) else int(k))
        for corpus, k in k_by_corpus
    ]
    mine = latest[(latest["model"] == model) & (latest["lever"] == lever)].to_dict("records")
    problems = []
    for corpus, k in pairs:
        rows = [r for r in mine if r["k"] == k and r["corpus"] == corpus]
        if not rows:
            problems.append(
                f"{corpus}: no equivalence verdict for {model}/{lever} K={k}, which is not a pass"
            )
        elif (verdict := rows[-1]["verdict"]) != PASS:
            problems.append(f"{corpus}: {verdict} ({rows[-1].get('reason', '')})")
    scored = set(pairs)
    ks = {k for _, k in pairs}
    for row in mine:
        if row["k"] in ks and row["verdict"] == FAIL and (row["corpus"], int(row["k"])) not in scored:
            reason = row.get("reason", "")
            problems.append(
                f"{row['corpus']}: fail at K={int(row['k'])} ({reason}); it changed outputs there"
            )
    return problems

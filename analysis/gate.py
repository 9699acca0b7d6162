"""Whether a lever has cleared the output-equivalence gate where it is used. Pure.

One rule for the analysis (analysis/final.py) and tune (experiments/decide.py):
a lever is usable for a model only if its latest verdict is 'pass' for that
model, lever and K on every corpus it is scored on, and no corpus's latest
verdict at one of those K is 'fail' (a lever that changed outputs anywhere is
not lossless). A missing verdict or 'no_reference' is no evidence that its
outputs are right, so it never counts as a pass; verdicts of other models
never count at all. van is the reference and needs none.

The tune judges a lever's equivalence on its path by pooled_verdicts instead: one paired test over
every session of the tune that measured the same model, lever, K and corpus (analysis.equivalence.pool),
at the pass rate its look is given (analysis.equivalence.look_pass_rate).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable

import pandas as pd

from analysis.equivalence import FAIL, PASS, Paired, judge_paired, paired_from_counts, pool
from vocab.cells import REFERENCE_LEVER
from vocab.schema import EquivalenceConfig

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
    # The last row per key in that order (NaN keys equal, as groupby(dropna=False).tail(1) takes them,
    # at a fraction of its cost: the tune's simulation asks once per decision).
    return _ordered(equivalence).drop_duplicates(KEY, keep="last").drop(columns=["_at", "_paired"])


def _ordered(equivalence: pd.DataFrame) -> pd.DataFrame:
    """The rows in the order latest_verdicts reads them (the latest last), with its sort columns."""
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
    return equivalence.assign(_at=judged_at, _paired=paired).sort_values(
        ["_at", "session_id", "_paired"], kind="stable"
    )


# What a stored verdict row carries of its paired test (analysis/verdicts.py's columns).
COUNT_COLUMNS = (
    "n_prompts",
    "discordant_against_lever",
    "discordant_for_lever",
    "noise_floor_exact_match_rate",
)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def paired_of_row(row: dict) -> Paired | None:
    """The paired counts of one stored verdict row; None where it holds none (judged without a
    replicate, by the logprob probe, or written before the columns). The replicate's changed prompts
    come from its exact-match rate against van (noise_floor_exact_match_rate, over the prompts the two
    answered: the paired prompts but for the rare one only the lever answered), at least the
    prompts the replicate changed alone (discordant_for_lever)."""
    if _missing(row.get("floor_cell_key")) or bool(row.get("changes_outputs") or False):
        return None
    values = [row.get(c) for c in COUNT_COLUMNS]
    if any(_missing(v) for v in values):
        return None
    n, against, for_lever, floor_rate = int(values[0]), int(values[1]), int(values[2]), float(values[3])
    if n <= 0:
        return None
    floor_changed = min(n, max(for_lever, round(n * (1.0 - floor_rate))))
    return paired_from_counts(
        n, against, for_lever, max(0, min(floor_changed - for_lever, n - against - for_lever))
    )


def pooled_counts(
    equivalence: pd.DataFrame | None, cell_keys: Collection[str]
) -> dict[tuple, tuple[Paired, int]]:
    """Per (model, lever, K, corpus): the pooled Paired over the lever cells among `cell_keys` that were
    judged paired, and how many cells (sessions) it pools. A cell judged again in a later session's
    verdicts (each session judges every cell of the store) counts once, by its latest judgement."""
    if (
        equivalence is None
        or equivalence.empty
        or not {"cell_key", *COUNT_COLUMNS} <= set(equivalence.columns)
    ):
        return {}
    rows = equivalence[equivalence["cell_key"].isin(cell_keys)]
    if rows.empty:
        return {}
    latest = _ordered(rows).drop_duplicates("cell_key", keep="last")
    parts: dict[tuple, list[Paired]] = {}
    for row in latest.to_dict("records"):
        if (paired := paired_of_row(row)) is not None:
            parts.setdefault(tuple(row[c] for c in KEY), []).append(paired)
    return {key: (pool(found), len(found)) for key, found in parts.items()}


def pooled_verdicts(
    equivalence: pd.DataFrame | None, cell_keys: Collection[str], cfg: EquivalenceConfig
) -> pd.DataFrame:
    """latest_verdicts, with the verdict of every (model, lever, K, corpus) that has paired counts
    among `cell_keys` (a tune's cells so far) replaced by judge_paired on their pooled counts at
    `cfg` (the look's pass rate: analysis.equivalence.look_pass_rate). Keys without such counts keep
    their latest verdict (a quantised lever's probe, an unpaired judgement)."""
    latest = latest_verdicts(equivalence)
    pooled = pooled_counts(equivalence, cell_keys)
    if not pooled:
        return latest
    latest = latest.copy()
    keys = list(zip(*(latest[c] for c in KEY), strict=True))
    verdicts, reasons = list(latest["verdict"]), list(latest["reason"])
    for i, key in enumerate(keys):
        if key not in pooled:
            continue
        paired, cells = pooled[key]
        verdict = judge_paired(paired, cfg)
        verdicts[i] = verdict.verdict
        reasons[i] = (
            f"pooled over {cells} session{'s' if cells > 1 else ''} of this tune "
            f"({paired.n_prompts} prompts), an identical lever passing {cfg.identical_pass_rate:.1%}: "
            f"{verdict.reason}"
        )
    return latest.assign(verdict=verdicts, reason=reasons)


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

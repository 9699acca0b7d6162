"""Best K per model x corpus for levers swept over several K (e.g. bestkpad over {4,6,8,12}). Pure.

Rule (analysis.decision.choose_smallest, the same rule as every other comparison):
let top be the K with the highest geometric mean over its repeats. The best K
is the smallest K over which the top K is not a 'real gain' by
analysis.decision.judge (its t-interval for top / K lies wholly above
1 + band, band = analysis.drift.band_by_lag over the sessions of both, at the
comparison's lag). So ties within noise go to the smaller K; with fewer than 2
repeats, or the drift unknown (NaN band: not judged, the rule fails closed),
nothing is a real gain and the smallest K stays. The best K is then
judged against the top K when the tie rule moved off it, else against the
runner-up K.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.compare import compare, typed_flags
from analysis.decision import CONFIDENCE, ByLag, choose_smallest
from analysis.drift import band_by_lag
from analysis.medians import sessions_of

GROUP = ["model", "corpus", "lever"]
BEST_K_COLUMNS = [*GROUP, "n_k", "best_k", "best_tok_per_s", "rule", "compared_k", "compared_tok_per_s"]


def multi_k_levers(medians: pd.DataFrame) -> pd.DataFrame:
    """Rows of (model, corpus, lever) groups measured at more than one K."""
    n_k = medians.groupby(GROUP, dropna=False)["k"].transform("nunique")
    return medians[n_k > 1]


def _band(drift: pd.DataFrame, *rows: pd.Series) -> ByLag:
    return band_by_lag(drift, sessions_of(pd.DataFrame(list(rows))))


def _geomean(row: pd.Series) -> float:
    values = [v for _, _, v in row["repeats"] if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def choose_k(candidates: pd.DataFrame, drift: pd.DataFrame, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The best K of one (model, corpus, lever) group (module doc) with its comparison columns."""
    ordered = candidates.sort_values("k").reset_index(drop=True)
    by_k = {int(row["k"]): row for _, row in ordered.iterrows()}
    chosen = choose_smallest(
        [(k, row["repeats"]) for k, row in by_k.items()],
        lambda k, top: _band(drift, by_k[k], by_k[top]),
        confidence,
    )
    best_k_, top_k = chosen if chosen else (int(ordered["k"].iloc[0]),) * 2
    best, top = by_k[best_k_], by_k[top_k]
    others = ordered[ordered["k"] != best_k_]
    compared = top if best_k_ != top_k else others.loc[others.apply(_geomean, axis=1).idxmax()]
    return {
        **{name: best[name] for name in GROUP},
        "n_k": len(ordered),
        "best_k": best_k_,
        "best_tok_per_s": float(best["median"]),
        "rule": "top K" if best_k_ == top_k else "smaller K: the top K is no real gain over it",
        "compared_k": int(compared["k"]),
        "compared_tok_per_s": float(compared["median"]),
        **compare(best["repeats"], compared["repeats"], _band(drift, best, compared), confidence),
    }


def best_k(medians: pd.DataFrame, drift: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per (model, corpus, lever) swept over several K: best_k, its tok/s and the verdict."""
    swept = multi_k_levers(medians)
    rows = [choose_k(group, drift, confidence) for _, group in swept.groupby(GROUP, dropna=False, sort=True)]
    return typed_flags(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=BEST_K_COLUMNS)


def at_best_k(medians: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """`medians` with each swept lever reduced to its best K (single-K levers unchanged)."""
    if best.empty:
        return medians
    chosen = best[[*GROUP, "best_k"]]
    merged = medians.merge(chosen, on=GROUP, how="left")
    keep = merged["best_k"].isna() | (merged["k"] == merged["best_k"])
    return merged[keep].drop(columns="best_k").reset_index(drop=True)

"""Best K per model x corpus for levers swept over several K (e.g. bestkpad over {4,6,8,12}). Pure.

Rule (analysis.decision.choose_smallest, the same rule as every other comparison):
let top be the K with the highest geometric mean over its repeats. The best K
is the smallest K over which the top K is not a 'real gain' by
analysis.decision.judge (its t-interval for top / K lies wholly above
1 + band, band = analysis.drift.band_by_lag over the sessions of both, at the
comparison's lag: k_bands). So ties within noise go to the smaller K; with fewer than 2
repeats, or the drift unknown (NaN band: not judged, the rule fails closed),
nothing is a real gain and the smallest K stays. The best K is then
judged against the top K when the tie rule moved off it, else against the
runner-up K. The tune's K sweep (experiments/decide.py choose_k) chooses by the
same two functions, choose_smallest and k_bands.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

import pandas as pd

from analysis.compare import compare, typed_flags
from analysis.decision import CONFIDENCE, ByLag, choose_smallest
from analysis.drift import band_by_lag

GROUP = ["model", "corpus", "lever"]
BEST_K_COLUMNS = [*GROUP, "n_k", "best_k", "best_tok_per_s", "rule", "compared_k", "compared_tok_per_s"]


def multi_k_levers(medians: pd.DataFrame) -> pd.DataFrame:
    """Rows of (model, corpus, lever) groups measured at more than one K."""
    n_k = medians.groupby(GROUP, dropna=False)["k"].transform("nunique")
    return medians[n_k > 1]


def _unknown(lag: float) -> float:
    return math.nan


def k_bands(drift: pd.DataFrame, sessions: Mapping[int, Collection[str]]) -> Callable[[int, int], ByLag]:
    """(K, top K) -> the band of their comparison: analysis.drift.band_by_lag over the sessions both
    ran in (`sessions`: K -> its sessions), what choose_smallest takes. Each band remembers its value
    per lag: judge, its words and the ties ask it again and again."""
    bands: dict[frozenset[str], ByLag] = {}

    def band(k: int, top: int) -> ByLag:
        both = frozenset(sessions[k]) | frozenset(sessions[top])
        if both not in bands:  # no drift table (no anchor run yet) or no session: unknown, as NaN
            known = not drift.empty and both
            bands[both] = ByLag(functools.cache(band_by_lag(drift, both).of_lag) if known else _unknown)
        return bands[both]

    return band


def _geomean(row: pd.Series) -> float:
    values = [v for _, _, v in row["repeats"] if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def group_best_k(
    candidates: pd.DataFrame, drift: pd.DataFrame, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """The best K of one (model, corpus, lever) group (module doc) with its comparison columns."""
    ordered = candidates.sort_values("k").reset_index(drop=True)
    by_k = {int(row["k"]): row for _, row in ordered.iterrows()}
    band = k_bands(drift, {k: row["sessions"] for k, row in by_k.items()})
    chosen = choose_smallest([(k, row["repeats"]) for k, row in by_k.items()], band, confidence)
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
        **compare(best["repeats"], compared["repeats"], band(best_k_, int(compared["k"])), confidence),
    }


def best_k(medians: pd.DataFrame, drift: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per (model, corpus, lever) swept over several K: best_k, its tok/s and the verdict."""
    swept = multi_k_levers(medians)
    groups = swept.groupby(GROUP, dropna=False, sort=True)
    rows = [group_best_k(group, drift, confidence) for _, group in groups]
    return typed_flags(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=BEST_K_COLUMNS)


def at_best_k(medians: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """`medians` with each swept lever reduced to its best K (single-K levers unchanged)."""
    if best.empty:
        return medians
    chosen = best[[*GROUP, "best_k"]]
    merged = medians.merge(chosen, on=GROUP, how="left")
    keep = merged["best_k"].isna() | (merged["k"] == merged["best_k"])
    return merged[keep].drop(columns="best_k").reset_index(drop=True)

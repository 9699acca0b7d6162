"""Best K per model x corpus for levers swept over several K (e.g. bestkpad over {4,6,8,12}). Pure.

Rule: let top be the K with the highest median tok/s. The best K is the smallest
K whose median m_K is within drift of the top:

    top_median / m_K - 1 <= band(sessions of both)      (analysis.drift.drift_band)

so a larger K has to beat a smaller one by more than the drift to be kept
(larger K costs more verification work for the same measured gain). With the
drift unknown (no anchor runs) the band is taken as 0: only exact ties go to
the smaller K. The best K is then compared with the top K when the tie rule
moved off it, else with the runner-up K.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.compare import compare, typed_flags
from analysis.drift import drift_band
from analysis.medians import sessions_of
from analysis.stats import relative_diff

GROUP = ["model", "corpus", "lever"]
BEST_K_COLUMNS = [*GROUP, "n_k", "best_k", "best_tok_per_s", "rule", "compared_k", "compared_tok_per_s"]


def multi_k_levers(medians: pd.DataFrame) -> pd.DataFrame:
    """Rows of (model, corpus, lever) groups measured at more than one K."""
    n_k = medians.groupby(GROUP, dropna=False)["k"].transform("nunique")
    return medians[n_k > 1]


def _band(drift: pd.DataFrame, *rows: pd.Series) -> float:
    return drift_band(drift, sessions_of(pd.DataFrame(list(rows))))


def choose_k(candidates: pd.DataFrame, drift: pd.DataFrame) -> dict[str, Any]:
    """The best K of one (model, corpus, lever) group (module doc) with its comparison columns."""
    ordered = candidates.sort_values("k").reset_index(drop=True)
    top = ordered.loc[ordered["median"].idxmax()]  # first maximum: the smaller K on exact ties
    best = top
    for _, row in ordered.iterrows():
        band = _band(drift, top, row)
        if relative_diff(top["median"], row["median"]) <= (0.0 if math.isnan(band) else band):
            best = row
            break
    others = ordered[ordered["k"] != best["k"]]
    compared = top if best["k"] != top["k"] else others.loc[others["median"].idxmax()]
    return {
        **{name: best[name] for name in GROUP},
        "n_k": len(ordered),
        "best_k": int(best["k"]),
        "best_tok_per_s": float(best["median"]),
        "rule": "top K" if best["k"] == top["k"] else "smaller K within drift of the top K",
        "compared_k": int(compared["k"]),
        "compared_tok_per_s": float(compared["median"]),
        **compare(
            float(best["median"]),
            float(compared["median"]),
            _band(drift, best, compared),
            (float(best["mad"]), float(compared["mad"])),
            (int(best["n"]), int(compared["n"])),
        ),
    }


def best_k(medians: pd.DataFrame, drift: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, corpus, lever) swept over several K: best_k, its tok/s and the verdict."""
    swept = multi_k_levers(medians)
    rows = [choose_k(group, drift) for _, group in swept.groupby(GROUP, dropna=False, sort=True)]
    return typed_flags(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=BEST_K_COLUMNS)


def at_best_k(medians: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """`medians` with each swept lever reduced to its best K (single-K levers unchanged)."""
    if best.empty:
        return medians
    chosen = best[[*GROUP, "best_k"]]
    merged = medians.merge(chosen, on=GROUP, how="left")
    keep = merged["best_k"].isna() | (merged["k"] == merged["best_k"])
    return merged[keep].drop(columns="best_k").reset_index(drop=True)

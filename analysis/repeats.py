"""Repeats of a cell: median and median absolute deviation (MAD). Pure."""

from __future__ import annotations

import pandas as pd

CELL_FIELDS = ["model", "corpus", "lever", "k"]


def mad(values: pd.Series) -> float:
    """Median absolute deviation: median(|x - median(x)|)."""
    return float((values - values.median()).abs().median())


def aggregate_repeats(cells: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """Per (model, corpus, lever, K): n repeats, median and MAD of output_tok_per_s.

    INVALID cells (valid == False) are left out unless include_invalid; the
    second value is how many were left out.
    """
    kept = cells
    excluded = 0
    if not include_invalid and "valid" in cells:
        kept = cells[cells["valid"].fillna(False).astype(bool)]
        excluded = len(cells) - len(kept)
    grouped = kept.groupby(CELL_FIELDS, dropna=False)["output_tok_per_s"]
    table = grouped.agg(n="count", median="median", mad=mad).reset_index()
    return table, excluded

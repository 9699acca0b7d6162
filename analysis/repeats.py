"""Repeats of a cell: median and median absolute deviation (MAD). Pure."""

from __future__ import annotations

import pandas as pd

CELL_FIELDS = ["model", "corpus", "lever", "k"]


def mad(values: pd.Series) -> float:
    """Median absolute deviation: median(|x - median(x)|)."""
    return float((values - values.median()).abs().median())


def valid_only(cells: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """The VALID rows (valid == True; a missing verdict counts as not valid), and how many were left out.

    With include_invalid, or when there is no `valid` column, every row is kept.
    """
    if include_invalid or "valid" not in cells:
        return cells, 0
    kept = cells[cells["valid"].fillna(False).astype(bool)]
    return kept, len(cells) - len(kept)


def aggregate_repeats(cells: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """Per (model, corpus, lever, K): n repeats, median and MAD of output_tok_per_s.

    INVALID cells (valid == False) are left out unless include_invalid; the
    second value is how many were left out.
    """
    kept, excluded = valid_only(cells, include_invalid)
    grouped = kept.groupby(CELL_FIELDS, dropna=False)["output_tok_per_s"]
    table = grouped.agg(n="count", median="median", mad=mad).reset_index()
    return table, excluded

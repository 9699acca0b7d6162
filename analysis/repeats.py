"""Repeats of a cell: median and median absolute deviation (MAD), which of them are VALID, and the one
label of a ratio with INVALID cells behind it. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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


def is_invalid(value: object) -> bool:
    """A `valid` that is False (numpy's too); None / NaN: not recorded, not INVALID."""
    return value is not None and not pd.isna(value) and not bool(value)  # type: ignore[arg-type]


def invalid_count(cells: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(INVALID cells, cells) among `cells` (rows as dicts with `valid`)."""
    rows = list(cells)
    return sum(is_invalid(r.get("valid")) for r in rows), len(rows)


def invalid_flag(sides: Sequence[tuple[str, int, int]], left_out: bool = False) -> str | None:
    """The one label of a ratio with an INVALID cell behind it (issue 47 item 5), on its own row in the
    summary and its exports, `grid compare`, Table 1 and the report; None when no cell is INVALID.

    `sides`: per side of the ratio, (its name, its INVALID cells, its cells), e.g. ("van", 1, 1).
    `left_out`: the INVALID cells were left out of the ratio (compare, Table 1: medians over VALID
    repeats) rather than measured into it (the summary's x van: one cell over one van cell).

        [("this", 0, 1), ("van", 1, 1)]              -> 'van cell INVALID'
        [("this", 1, 1), ("van", 1, 1)]              -> 'this cell and van cell INVALID'
        [("A", 1, 3), ("B", 0, 3)], left_out=True    -> '1 of 3 A cells INVALID, left out of the ratio'
        [("A", 3, 3)], left_out=True                 -> 'all 3 A cells INVALID, left out of the ratio'
    """
    parts = []
    for name, bad, total in sides:
        if not bad:
            continue
        if total == 1:
            parts.append(f"{name} cell")
        else:
            parts.append(f"{'all' if bad == total else f'{bad} of'} {total} {name} cells")
    if not parts:
        return None
    return " and ".join(parts) + " INVALID" + (", left out of the ratio" if left_out else "")


def aggregate_repeats(cells: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """Per (model, corpus, lever, K): n repeats, median and MAD of output_tok_per_s.

    INVALID cells (valid == False) are left out unless include_invalid; the
    second value is how many were left out.
    """
    kept, excluded = valid_only(cells, include_invalid)
    grouped = kept.groupby(CELL_FIELDS, dropna=False)["output_tok_per_s"]
    table = grouped.agg(n="count", median="median", mad=mad).reset_index()
    return table, excluded

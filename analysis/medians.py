"""Per lever configuration (model x corpus x lever x K): median over VALID repeats, and the repeats. Pure."""

from __future__ import annotations

import pandas as pd

from analysis.repeats import CELL_FIELDS, mad, valid_only

MEDIAN_COLUMNS = [*CELL_FIELDS, "n", "median", "mad", "sessions", "repeats"]


def lever_medians(measured: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """n, median and MAD of output_tok_per_s per (model, corpus, lever, k), and the sessions they ran in.

    As analysis.repeats.aggregate_repeats, plus `sessions` (sorted tuple of
    session ids) so that each comparison knows whose drift band applies, and
    `repeats`: the sorted tuple of per-repeat (session_id, repeat, tok/s) values
    that analysis.decision judges (paired by session and repeat). The second
    value is how many INVALID cells were left out.
    """
    if measured.empty:
        return pd.DataFrame(columns=MEDIAN_COLUMNS), 0
    kept, excluded = valid_only(measured, include_invalid)
    kept = kept[kept["output_tok_per_s"].notna()]
    if kept.empty:
        return pd.DataFrame(columns=MEDIAN_COLUMNS), excluded
    if "repeat" not in kept:
        kept = kept.assign(repeat=kept.groupby(CELL_FIELDS, dropna=False).cumcount())
    grouped = kept.groupby(CELL_FIELDS, dropna=False)
    table = grouped["output_tok_per_s"].agg(n="count", median="median", mad=mad)
    table["sessions"] = grouped["session_id"].agg(lambda s: tuple(sorted(set(s))))
    table["repeats"] = [repeat_values(group) for _, group in grouped]
    return table.reset_index()[MEDIAN_COLUMNS], excluded


def repeat_values(rows: pd.DataFrame) -> tuple[tuple[str, int, float], ...]:
    """The rows' (session_id, repeat, tok/s), sorted; the repeat is -1 where none was recorded."""
    repeats = rows["repeat"].fillna(-1).astype(int) if "repeat" in rows else pd.Series(-1, index=rows.index)
    values = zip(rows["session_id"].astype(str), repeats, rows["output_tok_per_s"].astype(float), strict=True)
    return tuple(sorted(values))


def sessions_of(rows: pd.DataFrame) -> set[str]:
    """Union of the `sessions` tuples of `rows`."""
    return {s for group in rows["sessions"] for s in group}

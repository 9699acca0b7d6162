"""Cells measured with repeated prompts are kept apart from clean ones, and said to be.

A cell run under load.allow_repeats records how many measured requests reused
a prompt its engine had already served (prompts_reused, workers/engine/served.py).
Such a cell's suffix-family figures are inflated (a greedy request drafts its
own earlier answer), so analysis leaves it out unless asked, and counts it.
"""

from __future__ import annotations

import pandas as pd


def reused_mask(cells: pd.DataFrame) -> pd.Series:
    """True for cells that reused prompts; cells stored before the count existed read as clean."""
    if "prompts_reused" not in cells.columns:
        return pd.Series(False, index=cells.index)
    return cells["prompts_reused"].fillna(0) > 0


def split_reused(cells: pd.DataFrame, include_reused: bool = False) -> tuple[pd.DataFrame, int]:
    """(cells to analyse, how many were left out for reusing prompts)."""
    mask = reused_mask(cells)
    if include_reused:
        return cells, 0
    return cells[~mask], int(mask.sum())


def reused_note(count: int) -> str | None:
    if not count:
        return None
    return (
        f"{count} cells measured with repeated prompts (load.allow_repeats) left out: their engines "
        "had served some measured prompts before, which inflates suffix decoding "
        "(include_reused=True shows them)."
    )

"""Two runs side by side: each lever configuration's tok/s on side A and side B, and B / A judged by
analysis.decision's rule (the same interval and drift band as every other comparison). Pure.

A side is one store, or one session of a store. Per (model, corpus, lever, k) measured VALID on both
sides: the medians, the repeats behind them, ratio = B / A from the per-repeat values (geometric
means; sides of different sessions are unpaired), its t-interval, and the label: a real gain or
loss only when the whole interval clears the drift band of the sessions involved (NaN band: not
judged, as everywhere else).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from analysis.compare import compare
from analysis.decision import CONFIDENCE
from analysis.drift import band_by_lag
from analysis.effective import also_differs
from analysis.repeats import CELL_FIELDS

# also_differs: what else side B's engines ran with unlike side A's for the configuration
# (analysis/effective.py: 'also differs: model runner V2 vs V1'), '' where nothing did or unknown.
SIDE_COLUMNS = [*CELL_FIELDS, "n_a", "tok_per_s_a", "n_b", "tok_per_s_b", "ratio", "ci_lo", "ci_hi",
                "drift_band_rel", "noise_terms", "label", "verdict", "also_differs"]  # fmt: skip


@dataclass(frozen=True)
class Side:
    """One side: its name as shown, `lever_medians`' table and `session_drift`'s table, and the
    VALID cells behind the medians (their engine_* columns say what each engine ran with)."""

    name: str
    medians: pd.DataFrame
    drift: pd.DataFrame
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)

    def config_cells(self, row: dict) -> list[dict]:
        """This side's cells of the configuration `row` names (CELL_FIELDS; a NaN K matches NaN)."""
        if self.cells.empty or not set(CELL_FIELDS) <= set(self.cells.columns):
            return []
        match = pd.Series(True, index=self.cells.index)
        for name in CELL_FIELDS:
            column = self.cells[name]
            match &= column.isna() if pd.isna(row[name]) else column == row[name]
        return self.cells[match].to_dict("records")


def side_by_side(a: Side, b: Side, confidence: float = CONFIDENCE) -> tuple[pd.DataFrame, list[str]]:
    """One row per configuration measured on both sides (SIDE_COLUMNS); and a line per
    configuration found on one side only."""
    drift = (
        pd.concat([a.drift, b.drift], ignore_index=True)
        if not a.drift.empty or not b.drift.empty
        else a.drift
    )
    both = a.medians.merge(b.medians, on=CELL_FIELDS, suffixes=("_a", "_b"), how="outer", indicator=True)
    rows, alone = [], []
    for row in both.sort_values(CELL_FIELDS, na_position="first").to_dict("records"):
        what = "/".join(str(row[f]) for f in CELL_FIELDS if not pd.isna(row[f]))
        if row["_merge"] != "both":
            alone.append(f"only in {a.name if row['_merge'] == 'left_only' else b.name}: {what}")
            continue
        band = band_by_lag(drift, set(row["sessions_a"]) | set(row["sessions_b"]))  # at the comparison's lag
        judged = compare(row["repeats_b"], row["repeats_a"], band, confidence)
        rows.append(
            {
                **{f: row[f] for f in CELL_FIELDS},
                "n_a": row["n_a"],
                "tok_per_s_a": row["median_a"],
                "n_b": row["n_b"],
                "tok_per_s_b": row["median_b"],
                "ratio": judged["rel_diff"] + 1.0,
                "ci_lo": judged["ci_lo"],
                "ci_hi": judged["ci_hi"],
                "drift_band_rel": judged["drift_band_rel"],  # as applied, at its lag
                "noise_terms": judged["noise_terms"],
                "label": judged["label"],
                "verdict": judged["verdict"],
                "also_differs": also_differs(b.config_cells(row), a.config_cells(row)),
            }
        )
    return pd.DataFrame(rows, columns=SIDE_COLUMNS), alone

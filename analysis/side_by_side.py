"""Two runs side by side: each lever configuration's tok/s on side A and side B, and B / A judged by
analysis.decision's rule (the same interval and drift band as every other comparison). Pure.

A side is one store, or one session of a store. Per (model, corpus, lever, k) measured VALID on both
sides: the medians, the repeats behind them, ratio = B / A from the per-repeat values (geometric
means; sides of different sessions are unpaired), its t-interval, and the label: a real gain or
loss only when the whole interval clears the drift band of the sessions involved (NaN band: not
judged, as everywhere else). INVALID cells are left out of the medians, and the row says so
(invalid_left_out, analysis/repeats.py invalid_flag: '1 of 3 A cells INVALID, left out of the
ratio'); a configuration with no VALID cell on a side says so on its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from analysis.compare import compare
from analysis.decision import CONFIDENCE
from analysis.drift import band_by_lag
from analysis.effective import also_differs
from analysis.repeats import CELL_FIELDS, invalid_count, invalid_flag

# also_differs: what else side B's engines ran with unlike side A's for the configuration
# (analysis/effective.py: 'also differs: model runner V2 vs V1'), '' where nothing did or unknown.
# invalid_left_out: the INVALID cells of the configuration left out of either side's median
# (analysis/repeats.py invalid_flag), null where none was.
SIDE_COLUMNS = [*CELL_FIELDS, "n_a", "tok_per_s_a", "n_b", "tok_per_s_b", "ratio", "ci_lo", "ci_hi",
                "drift_band_rel", "noise_terms", "label", "verdict", "also_differs",
                "invalid_left_out"]  # fmt: skip


@dataclass(frozen=True)
class Side:
    """One side: its name as shown, `lever_medians`' table and `session_drift`'s table, the
    VALID cells behind the medians (their engine_* columns say what each engine ran with), and every
    measured cell, INVALID ones included (what the medians left out)."""

    name: str
    medians: pd.DataFrame
    drift: pd.DataFrame
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    measured: pd.DataFrame = field(default_factory=pd.DataFrame)

    def config_cells(self, row: dict, every: bool = False) -> list[dict]:
        """This side's VALID cells (every measured one with `every`) of the configuration `row`
        names (CELL_FIELDS; a NaN K matches NaN)."""
        cells = self.measured if every else self.cells
        if cells.empty or not set(CELL_FIELDS) <= set(cells.columns):
            return []
        match = pd.Series(True, index=cells.index)
        for name in CELL_FIELDS:
            column = cells[name]
            match &= column.isna() if pd.isna(row[name]) else column == row[name]
        return cells[match].to_dict("records")

    def configurations(self) -> pd.DataFrame:
        """Every configuration (CELL_FIELDS) this side measured, INVALID-only ones included."""
        if self.measured.empty or not set(CELL_FIELDS) <= set(self.measured.columns):
            return pd.DataFrame(columns=CELL_FIELDS)
        return self.measured[CELL_FIELDS].drop_duplicates()


def invalid_left_out(a: Side, b: Side, row: dict) -> str | None:
    """The configuration's INVALID cells left out of A's and B's medians, in the one label's words
    (analysis/repeats.py invalid_flag); None where none was."""
    counts = [("A", *invalid_count(a.config_cells(row, every=True))),
              ("B", *invalid_count(b.config_cells(row, every=True)))]  # fmt: skip
    return invalid_flag(counts, left_out=True)


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
        flag = invalid_left_out(a, b, row)
        if row["_merge"] != "both":
            where = a.name if row["_merge"] == "left_only" else b.name
            alone.append(f"only in {where}: {what}" + (f"; {flag}" if flag else ""))
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
                "invalid_left_out": flag,
            }
        )
    # A configuration measured on either side with no VALID cell on either: said too, not dropped.
    neither = (
        pd.concat([a.configurations(), b.configurations()], ignore_index=True)
        .drop_duplicates()
        .merge(both[CELL_FIELDS], on=CELL_FIELDS, how="left", indicator=True)
    )
    for row in neither[neither["_merge"] == "left_only"].sort_values(CELL_FIELDS).to_dict("records"):
        what = "/".join(str(row[f]) for f in CELL_FIELDS if not pd.isna(row[f]))
        flag = invalid_left_out(a, b, row)
        alone.append(f"no VALID cell on either side: {what}" + (f"; {flag}" if flag else ""))
    table = pd.DataFrame(rows, columns=SIDE_COLUMNS)
    flags = table["invalid_left_out"].astype(object)
    table["invalid_left_out"] = flags.where(flags.notna(), None)  # null where none was, not NaN
    return table, alone

"""After a session: judge every lever's outputs against van's and store the verdicts.

Cells are compared when they sent the same prompts in the same order: same
model, corpus, number of prompts, seed and max_tokens (request i is then the
same prompt in both). The reference is a van run at temperature 0 (the grid's
own van cell before the drift anchors); a second van run of the same prompts,
when there is one (an anchor, a repeat), measures the noise floor. Verdicts
land in <root>/equivalence/<session_id>.parquet, one row per judged cell.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa

from analysis.equivalence import NO_REFERENCE, Comparison, compare, judge
from grid.schema import EquivalenceConfig
from store.atomic import write_parquet
from store.layout import StoreLayout
from store.read import connect, has_view

VERDICT_COLUMNS = [
    "session_id",
    "model",
    "corpus",
    "lever",
    "k",
    "cell_key",
    "reference_cell_key",
    "n_prompts",
    "exact_match_rate",
    "noise_floor_exact_match_rate",
    "first_divergence_chars_median",
    "verdict",
    "reason",
]
SAME_PROMPTS = ["model", "corpus", "num_prompts", "seed", "max_tokens"]
REFERENCE_LEVER = "van"


def latest_runs(root: Path) -> tuple[pd.DataFrame, dict[str, dict[int, str]]]:
    """Latest ok attempt per cell (with its load settings) and its outputs by request index."""
    con = connect(root)
    if not (has_view(con, "cells") and has_view(con, "requests")):
        return pd.DataFrame(), {}
    cells = con.execute(
        """SELECT * FROM cells
           QUALIFY row_number() OVER (PARTITION BY cell_key ORDER BY attempt_id DESC) = 1"""
    ).df()
    load = cells["config_json"].map(lambda text: json.loads(text)["load"])
    for name in ("num_prompts", "seed", "temperature"):
        cells[name] = load.map(lambda spec, name=name: spec[name])
    if "anchor" not in cells.columns:
        cells["anchor"] = None
    rows = con.execute(
        "SELECT attempt_id, request_idx, output_text FROM requests "
        "WHERE error_type IS NULL AND attempt_id IN (SELECT unnest($ids))",
        {"ids": list(cells["attempt_id"])},
    ).df()
    outputs: dict[str, dict[int, str]] = {}
    for attempt_id, group in rows.groupby("attempt_id"):
        outputs[str(attempt_id)] = dict(zip(group["request_idx"], group["output_text"], strict=True))
    return cells, outputs


def verdicts(root: Path, session_id: str, cfg: EquivalenceConfig) -> pd.DataFrame:
    """One verdict per non-van cell of the store's latest attempts (see module doc)."""
    cells, outputs = latest_runs(root)
    found = []
    if cells.empty:
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    for _, group in cells.groupby(SAME_PROMPTS, dropna=False):
        greedy_van = group[(group["lever"] == REFERENCE_LEVER) & (group["temperature"] == 0)]
        # The grid's own van cell first, anchors after: the reference is the cell users see.
        greedy_van = greedy_van.sort_values("anchor", na_position="first")
        reference = greedy_van.iloc[0] if len(greedy_van) else None
        floor: Comparison | None = None
        if len(greedy_van) > 1:
            floor = compare(outputs.get(greedy_van.iloc[0]["attempt_id"], {}),
                            outputs.get(greedy_van.iloc[1]["attempt_id"], {}))  # fmt: skip
        for _, cell in group.iterrows():
            if cell["lever"] == REFERENCE_LEVER and cell["temperature"] == 0:
                continue
            row = {name: cell[name] for name in ("model", "corpus", "lever", "k", "cell_key")}
            if reference is None:
                found.append({**row, "verdict": NO_REFERENCE, "reason": "no greedy van run of these prompts"})
                continue
            lever = compare(outputs.get(reference["attempt_id"], {}), outputs.get(cell["attempt_id"], {}))
            verdict = judge(lever, floor, cfg)
            found.append(
                {
                    **row,
                    "reference_cell_key": reference["cell_key"],
                    "n_prompts": lever.n_prompts,
                    "exact_match_rate": lever.exact_match_rate,
                    "noise_floor_exact_match_rate": floor.exact_match_rate if floor else None,
                    "first_divergence_chars_median": lever.first_divergence_median,
                    "verdict": verdict.verdict,
                    "reason": verdict.reason,
                }
            )
    frame = pd.DataFrame(found, columns=VERDICT_COLUMNS[1:])
    frame.insert(0, "session_id", session_id)
    return frame


def write_verdicts(root: Path, session_id: str, cfg: EquivalenceConfig) -> pd.DataFrame:
    """Compute and store the session's verdicts (atomically); return them."""
    frame = verdicts(root, session_id, cfg)
    if not frame.empty:
        table = pa.Table.from_pandas(frame.astype({"n_prompts": "Int64"}), preserve_index=False)
        write_parquet(StoreLayout(root).equivalence_file(session_id), table)
    return frame

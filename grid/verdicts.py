"""After a session: judge every lever's outputs against van's and store the verdicts.

Cells are compared when they sent the same prompts in the same order: same
model, corpus, number of prompts, seed and max_tokens (request i is then the
same prompt in both). The reference is a van run at temperature 0 (the grid's
own van cell before the drift anchors); a second van run of the same prompts,
when there is one (an anchor, a repeat), measures the noise floor. Verdicts
land in <root>/equivalence/<session_id>.parquet, one row per judged cell.

Lossless levers are judged by exact match (analysis/equivalence.py: judge);
quantised levers (lever.quantized) by the logprob probe's top-k agreement and
KL against van (judge_distribution). Both kinds report the probe's figures
when both cells ran it.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from analysis.equivalence import (
    NO_REFERENCE,
    Comparison,
    Distribution,
    compare,
    compare_distributions,
    judge,
    judge_distribution,
)
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
    "probe_positions",
    "topk_agreement",
    "kl_nats",
    "noise_floor_kl_nats",
    # Quantised levers change outputs on purpose: judged on the probe, and only 'pass' clears them.
    "changes_outputs",
    "verdict",
    "reason",
]
SAME_PROMPTS = ["model", "corpus", "num_prompts", "seed", "max_tokens"]
REFERENCE_LEVER = "van"


# attempt_id -> (prompt_id, position) -> token id -> logprob
Probes = dict[str, dict[tuple[str, int], dict[int, float]]]


def latest_runs(root: Path) -> tuple[pd.DataFrame, dict[str, dict[int, str]], Probes]:
    """Latest ok attempt per cell (with its load settings), its outputs by request index, its probe."""
    con = connect(root)
    if not (has_view(con, "cells") and has_view(con, "requests")):
        return pd.DataFrame(), {}, {}
    cells = con.execute(
        """SELECT * FROM cells
           QUALIFY row_number() OVER (PARTITION BY cell_key ORDER BY attempt_id DESC) = 1"""
    ).df()
    config = cells["config_json"].map(json.loads)
    for name in ("num_prompts", "seed", "temperature"):
        cells[name] = config.map(lambda c, name=name: c["load"][name])
    cells["quantized"] = config.map(lambda c: bool(c.get("lever", {}).get("quantized")))
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
    return cells, outputs, latest_probes(con, list(cells["attempt_id"]))


def latest_probes(con: duckdb.DuckDBPyConnection, attempt_ids: list[str]) -> Probes:
    """The probe rows of these attempts, keyed for compare_distributions."""
    if not has_view(con, "probes"):
        return {}
    rows = con.execute(
        "SELECT attempt_id, prompt_id, position, token_ids, logprobs FROM probes "
        "WHERE attempt_id IN (SELECT unnest($ids))",
        {"ids": attempt_ids},
    ).fetchall()
    probes: Probes = {}
    for attempt_id, prompt_id, position, token_ids, logprobs in rows:
        probes.setdefault(attempt_id, {})[(prompt_id, position)] = dict(zip(token_ids, logprobs, strict=True))
    return probes


def distribution(probes: Probes, reference: str, candidate: str) -> Distribution | None:
    """compare_distributions of two attempts' probes; None unless both ran one."""
    if reference not in probes or candidate not in probes:
        return None
    return compare_distributions(probes[reference], probes[candidate])


def verdicts(root: Path, session_id: str, cfg: EquivalenceConfig) -> pd.DataFrame:
    """One verdict per non-van cell of the store's latest attempts (see module doc)."""
    cells, outputs, probes = latest_runs(root)
    found = []
    if cells.empty:
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    for _, group in cells.groupby(SAME_PROMPTS, dropna=False):
        greedy_van = group[(group["lever"] == REFERENCE_LEVER) & (group["temperature"] == 0)]
        # The grid's own van cell first, anchors after: the reference is the cell users see.
        greedy_van = greedy_van.sort_values("anchor", na_position="first")
        reference = greedy_van.iloc[0] if len(greedy_van) else None
        floor: Comparison | None = None
        floor_dist: Distribution | None = None
        if len(greedy_van) > 1:
            first, second = greedy_van.iloc[0]["attempt_id"], greedy_van.iloc[1]["attempt_id"]
            floor = compare(outputs.get(first, {}), outputs.get(second, {}))
            floor_dist = distribution(probes, first, second)
        for _, cell in group.iterrows():
            if cell["lever"] == REFERENCE_LEVER and cell["temperature"] == 0:
                continue
            row = {name: cell[name] for name in ("model", "corpus", "lever", "k", "cell_key")}
            row["changes_outputs"] = bool(cell["quantized"])
            if reference is None:
                found.append({**row, "verdict": NO_REFERENCE, "reason": "no greedy van run of these prompts"})
                continue
            lever = compare(outputs.get(reference["attempt_id"], {}), outputs.get(cell["attempt_id"], {}))
            dist = distribution(probes, reference["attempt_id"], cell["attempt_id"])
            verdict = judge_distribution(dist, cfg) if cell["quantized"] else judge(lever, floor, cfg)
            found.append(
                {
                    **row,
                    "reference_cell_key": reference["cell_key"],
                    "n_prompts": lever.n_prompts,
                    "exact_match_rate": lever.exact_match_rate,
                    "noise_floor_exact_match_rate": floor.exact_match_rate if floor else None,
                    "first_divergence_chars_median": lever.first_divergence_median,
                    "probe_positions": dist.n_positions if dist else None,
                    "topk_agreement": dist.topk_agreement if dist else None,
                    "kl_nats": dist.kl_nats if dist else None,
                    "noise_floor_kl_nats": floor_dist.kl_nats if floor_dist else None,
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
        floats = {name: "Float64" for name in ("topk_agreement", "kl_nats", "noise_floor_kl_nats")}
        types = {"n_prompts": "Int64", "probe_positions": "Int64", **floats}
        table = pa.Table.from_pandas(frame.astype(types), preserve_index=False)
        write_parquet(StoreLayout(root).equivalence_file(session_id), table)
    return frame

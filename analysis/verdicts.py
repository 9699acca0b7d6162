"""After a session: judge every lever's outputs against van's and store the verdicts.

Cells are compared when they sent the same prompts: same model, corpus,
number of prompts, prompt seed (load.seed + repeat) and max_tokens; outputs are
matched prompt by prompt (prompt ids), the warm-up's beside the measured ones under
gates.equivalence.judge_warmup (the same prompts for every lever of a repeat). The reference is a van run at
temperature 0 (the grid's own van cell, not a replicate or anchor); the second
van run of the same prompts (the grid's `replicate` cell, else an anchor)
measures van's own run-to-run agreement. Verdicts are keyed by (model, lever,
K, corpus) and land in <root>/equivalence/<session_id>.parquet.

Only attempts whose files are whole are read (store.read.connect checks sizes
and checksums); a lever cell whose outputs still fail to read (a manifest
older than the checksums, damaged past its footer) gets `no_reference` with a
reason that names the file, and the frame's attrs["left_out"] lists every
attempt left out, one line each.

Lossless levers are judged by a paired non-inferiority test against that
replicate (analysis/equivalence.py: judge_paired: the upper bound on how many
more outputs the lever changes than the replicate does must lie below the
margin, gates.equivalence.noninferiority_margin widened from the replicate's
own changed share where the prompts are too few for a lever identical to van to
pass: margin_applied); without a replicate, by exact match against a fixed
rate (judge: every output must match, so a missing floor never excuses a
changed output). Levers that change outputs on purpose
(lever.quantized, from the lever's config, never from the verdict rows) by the
logprob probe's top-k agreement and KL against van (judge_distribution). Every
row reports the probe's figures when both cells ran it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from analysis.equivalence import (
    NO_REFERENCE,
    Comparison,
    Distribution,
    applied_margin,
    compare,
    compare_distributions,
    compare_paired,
    excess_changed_upper_bound,
    judge,
    judge_distribution,
    judge_paired,
)
from analysis.load import LATEST
from store.atomic import write_parquet
from store.layout import REQUESTS, StoreLayout
from store.read import connect, damaged, has_view
from vocab.cells import REFERENCE_LEVER
from vocab.schema import EquivalenceConfig

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
    # The paired test (judge_paired): van's replicate, discordant prompts, McNemar p
    # (reported, not deciding), the lever's excess changed share of prompts over the
    # replicate's and its upper bound, which decides against the margin.
    "floor_cell_key",
    "discordant_against_lever",
    "discordant_for_lever",
    "mcnemar_p",
    "excess_changed_share",
    "excess_changed_share_upper",
    # The margin the bound was held to: gates.equivalence.noninferiority_margin, widened from the
    # replicate's own changed share where the prompts are too few for a lever identical to van to
    # pass identical_pass_rate of the time (analysis/equivalence.py: applied_margin).
    "margin_applied",
    "lever_prefix_share_median",
    "floor_prefix_share_median",
    "probe_positions",
    "topk_agreement",
    "kl_nats",
    "noise_floor_kl_nats",
    # Quantised levers change outputs on purpose: judged on the probe, and only 'pass' clears them.
    "changes_outputs",
    "verdict",
    "reason",
]
SAME_PROMPTS = ["model", "corpus", "num_prompts", "prompt_seed", "max_tokens"]


# attempt_id -> (prompt_id, position) -> token id -> logprob
Probes = dict[str, dict[tuple[str, int], dict[int, float]]]


def judged_phases(cfg: EquivalenceConfig) -> tuple[str, ...]:
    """The request phases whose outputs the gate judges: the measured ones, and the warm-up's (same
    prompts for every lever of a repeat, apart from the measured ones) under judge_warmup."""
    return ("warmup", "measure") if cfg.judge_warmup else ("measure",)


def latest_runs(
    root: Path, phases: tuple[str, ...] = ("measure",)
) -> tuple[pd.DataFrame, dict[str, dict[str, str]], Probes]:
    """Latest ok attempt per cell (with its load settings), its outputs (of `phases`) by prompt, its probe."""
    con = connect(root)
    if not (has_view(con, "cells") and has_view(con, "requests")):
        return pd.DataFrame(), {}, {}
    cells = con.execute(
        f"""SELECT * FROM cells
           QUALIFY {LATEST.format(key="cell_key")}"""
    ).df()
    config = cells["config_json"].map(json.loads)
    for name in ("num_prompts", "seed", "temperature"):
        cells[name] = config.map(lambda c, name=name: c["load"][name])
    cells["quantized"] = config.map(lambda c: bool(c.get("lever", {}).get("quantized")))
    # Cells stored before each repeat had its own seed shuffled with load.seed alone.
    if "prompt_seed" not in cells.columns:
        cells["prompt_seed"] = cells["seed"]
    cells["prompt_seed"] = cells["prompt_seed"].fillna(cells["seed"])
    for name in ("anchor", "replicate"):
        if name not in cells.columns:
            cells[name] = None
    rows, unreadable = read_outputs(con, root, cells, phases)
    cells.attrs["unreadable"] = unreadable
    cells.attrs["left_out"] = [f"left out: {line}" for line in damaged(con)["problem"]]
    outputs: dict[str, dict[str, str]] = {}
    for attempt_id, group in rows.groupby("attempt_id"):
        # A prompt sent twice (load.allow_repeats) is judged on its first answer.
        answers = outputs.setdefault(str(attempt_id), {})
        for prompt_id, text in zip(group["prompt_id"], group["output_text"], strict=True):
            answers.setdefault(str(prompt_id), text)
    return cells, outputs, latest_probes(con, list(cells["attempt_id"]))


def read_outputs(
    con: duckdb.DuckDBPyConnection, root: Path, cells: pd.DataFrame, phases: tuple[str, ...] = ("measure",)
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Outputs of these cells' attempts, and {attempt_id: problem line} for each file that would not read.

    connect's views hold only whole attempts, but a manifest written before
    sizes and checksums were recorded gets a footer check only: if the bulk read
    fails, each attempt's file is read alone and those that fail are left out.
    """
    query = (
        "SELECT attempt_id, prompt_id, output_text FROM {source} "
        "WHERE error_type IS NULL AND attempt_id IN (SELECT unnest($ids)) "
        "AND phase IN (SELECT unnest($phases)) "
        "ORDER BY phase = 'measure', request_idx"
    )
    try:
        params = {"ids": list(cells["attempt_id"]), "phases": list(phases)}
        return con.execute(query.format(source="requests"), params).df(), {}
    except duckdb.Error:
        pass
    layout, frames, unreadable = StoreLayout(root), [], {}
    for cell_key, attempt_id in zip(cells["cell_key"], cells["attempt_id"], strict=True):
        path = layout.attempt_dir(cell_key, attempt_id) / REQUESTS
        source = f"read_parquet('{str(path).replace(chr(39), chr(39) * 2)}')"
        try:
            frames.append(
                con.execute(query.format(source=source), {"ids": [attempt_id], "phases": list(phases)}).df()
            )
        except duckdb.Error as exc:
            error = str(exc).splitlines()[0]
            unreadable[attempt_id] = f"cell {cell_key} attempt {attempt_id}: {path}: unreadable ({error})"
    columns = ["attempt_id", "prompt_id", "output_text"]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)), unreadable


def latest_probes(con: duckdb.DuckDBPyConnection, attempt_ids: list[str]) -> Probes:
    """The probe rows of these attempts, keyed for compare_distributions (none if a probe file won't read)."""
    if not has_view(con, "probes"):
        return {}
    try:
        rows = con.execute(
            "SELECT attempt_id, prompt_id, position, token_ids, logprobs FROM probes "
            "WHERE attempt_id IN (SELECT unnest($ids))",
            {"ids": attempt_ids},
        ).fetchall()
    except duckdb.Error:  # an older manifest's probe file, damaged past its footer
        return {}
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
    cells, outputs, probes = latest_runs(root, judged_phases(cfg))
    found = []
    if cells.empty:
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    unreadable: dict[str, str] = cells.attrs.get("unreadable", {})
    left_out = [*cells.attrs.get("left_out", []), *(f"left out: {line}" for line in unreadable.values())]
    for _, cell in cells[cells["attempt_id"].isin(set(unreadable))].iterrows():
        if cell["lever"] != REFERENCE_LEVER or cell["temperature"] != 0:
            row = {name: cell[name] for name in ("model", "corpus", "lever", "k", "cell_key")}
            reason = f"not judged: {unreadable[cell['attempt_id']]}"
            found.append(
                {**row, "changes_outputs": bool(cell["quantized"]), "verdict": NO_REFERENCE, "reason": reason}
            )
    cells = cells[~cells["attempt_id"].isin(set(unreadable))]
    for _, group in cells.groupby(SAME_PROMPTS, dropna=False):
        greedy_van = group[(group["lever"] == REFERENCE_LEVER) & (group["temperature"] == 0)]
        # The grid's own van cell first, then its replicate, then anchors: the reference users see.
        order = greedy_van["anchor"].notna() * 2 + greedy_van["replicate"].fillna(False).astype(bool)
        greedy_van = greedy_van.iloc[order.argsort(kind="stable")]
        reference = greedy_van.iloc[0] if len(greedy_van) else None
        second = greedy_van.iloc[1] if len(greedy_van) > 1 else None
        floor: Comparison | None = None
        floor_dist: Distribution | None = None
        if reference is not None and second is not None:
            floor = compare(outputs.get(reference["attempt_id"], {}), outputs.get(second["attempt_id"], {}))
            floor_dist = distribution(probes, reference["attempt_id"], second["attempt_id"])
        for _, cell in group.iterrows():
            if cell["lever"] == REFERENCE_LEVER and cell["temperature"] == 0:
                continue
            row = {name: cell[name] for name in ("model", "corpus", "lever", "k", "cell_key")}
            row["changes_outputs"] = bool(cell["quantized"])
            if reference is None:
                found.append({**row, "verdict": NO_REFERENCE, "reason": "no greedy van run of these prompts"})
                continue
            van_out = outputs.get(reference["attempt_id"], {})
            lever = compare(van_out, outputs.get(cell["attempt_id"], {}))
            dist = distribution(probes, reference["attempt_id"], cell["attempt_id"])
            paired = (
                compare_paired(
                    van_out, outputs.get(cell["attempt_id"], {}), outputs.get(second["attempt_id"], {})
                )
                if second is not None
                else None
            )
            if cell["quantized"]:
                verdict = judge_distribution(dist, cfg)
            elif paired is not None:
                verdict = judge_paired(paired, cfg)
            else:
                verdict = judge(lever, None, cfg)
            found.append(
                {
                    **row,
                    "reference_cell_key": reference["cell_key"],
                    "floor_cell_key": second["cell_key"] if second is not None else None,
                    "discordant_against_lever": paired.floor_only if paired else None,
                    "discordant_for_lever": paired.lever_only if paired else None,
                    "mcnemar_p": paired.p_value if paired else None,
                    "excess_changed_share": paired.excess_changed_share if paired else None,
                    "excess_changed_share_upper": (
                        excess_changed_upper_bound(
                            paired.floor_only, paired.lever_only, paired.n_prompts, cfg.alpha
                        )
                        if paired
                        else None
                    ),
                    "margin_applied": (
                        # The margin the verdict used: narrowed by the lever-replicate discordance.
                        applied_margin(
                            paired.n_prompts,
                            paired.n_prompts - paired.floor_matches,
                            cfg,
                            paired.floor_only + paired.lever_only,
                        )
                        if paired and paired.n_prompts
                        else None
                    ),
                    "lever_prefix_share_median": paired.lever_prefix_share if paired else None,
                    "floor_prefix_share_median": paired.floor_prefix_share if paired else None,
                    "n_prompts": paired.n_prompts if paired else lever.n_prompts,
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
    # When these verdicts were reached (UTC, ISO 8601: sorts as time): the latest verdict is chosen by
    # it (analysis.gate.latest_verdicts), not by the session id, which a user may name as they like.
    frame.insert(1, "judged_at", dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"))
    # Attempts not judged or not used as a reference because a file is damaged, one line each.
    frame.attrs["left_out"] = left_out
    return frame


def write_verdicts(root: Path, session_id: str, cfg: EquivalenceConfig) -> pd.DataFrame:
    """Compute and store the session's verdicts (atomically); return them."""
    frame = verdicts(root, session_id, cfg)
    if not frame.empty:
        floats = (
            "topk_agreement", "kl_nats", "noise_floor_kl_nats", "mcnemar_p",
            "excess_changed_share", "excess_changed_share_upper", "margin_applied",
            "lever_prefix_share_median", "floor_prefix_share_median",
        )  # fmt: skip
        ints = ("n_prompts", "probe_positions", "discordant_against_lever", "discordant_for_lever")
        types = {**dict.fromkeys(ints, "Int64"), **dict.fromkeys(floats, "Float64")}
        table = pa.Table.from_pandas(frame.astype(types), preserve_index=False)
        write_parquet(StoreLayout(root).equivalence_file(session_id), table)
    return frame

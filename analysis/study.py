"""The study's answer in one object: what notebooks and `python -m grid report` read.

For each model: which lever and which K give the most output tok/s on the
final corpus, by how much over `van`, and whether that is beyond the drift
between sessions (analysis.drift) and the repeats' spread (analysis.compare).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from analysis import load
from analysis.best_k import at_best_k, best_k
from analysis.clean import reused_mask, reused_note, split_reused
from analysis.confirmation import CONFIRM_COLUMNS, confirmations, prompts_seen
from analysis.decision import CONFIDENCE
from analysis.drift import session_drift
from analysis.effective import also_differs, fixed_k, fixed_k_words, is_marlin, lever_shown, ran_with
from analysis.final import FINAL_CORPUS, final_levers, speedup_geomean, table1
from analysis.gate import parse_k_by_corpus
from analysis.medians import lever_medians
from analysis.repeats import invalid_count, invalid_flag
from store.fs import StoreRoot
from store.layout import StoreLayout
from store.read import connect, has_view
from vocab.paths import store_path

STORE_ENV = "LEVER_GRID_STORE"
STORE_OPTIONS_ENV = "LEVER_GRID_STORE_OPTIONS"
DEFAULT_STORE = "results"


def store_root_from_env(env: Mapping[str, str] = os.environ) -> StoreRoot:
    """$LEVER_GRID_STORE, default `results`; a relative path is relative to the project root.

    A URL (s3://bucket/prefix) is opened through pyarrow (store/fs.py), with
    $LEVER_GRID_STORE_OPTIONS as its paths.store_options in JSON (e.g.
    {"endpoint_override": "minio:9000", "scheme": "http"}); credentials come from the environment.
    """
    options = json.loads(env.get(STORE_OPTIONS_ENV) or "{}")
    return store_path(env.get(STORE_ENV) or DEFAULT_STORE, options)


@dataclass(frozen=True)
class ConfirmationCells:
    """grid/orchestrate/confirm.py's record of an experiment and the cells it names
    (analysis/confirmation.py)."""

    record: Mapping[str, object] | None
    measured: pd.DataFrame
    anchors: pd.DataFrame


@dataclass(frozen=True)
class Study:
    """Every table of the analysis; each derived from the ones above it."""

    measured: pd.DataFrame  # latest ok attempt per cell, INVALID ones included
    anchors: pd.DataFrame  # anchor runs, one row per session x anchor position
    sessions: pd.DataFrame  # session fingerprints
    equivalence: pd.DataFrame  # output-equivalence verdicts (may be empty)
    medians: pd.DataFrame  # per (model, corpus, lever, k): n, median, MAD over VALID repeats
    drift: pd.DataFrame  # per session: anchor start/end/mean tok/s, drift_rel
    best_k: pd.DataFrame  # per (model, corpus, swept lever): best K and verdict
    final: pd.DataFrame  # per model: final lever, speedup over van, verdict
    table1: pd.DataFrame
    speedup_geomean: float
    excluded_invalid: int  # INVALID measured cells left out
    excluded_invalid_anchors: int
    final_corpus: str = FINAL_CORPUS
    # Per model: the held-out confirmation's figure of its final configuration, or why none.
    confirmation: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CONFIRM_COLUMNS))
    # The two-sided confidence of every interval (above 90 % where sequential looks are corrected for).
    confidence: float = CONFIDENCE
    # What a reader must know, then one line per cell left out of the tables and why
    # (damaged file, failed, INVALID, repeated prompts).
    notes: list[str] = field(default_factory=list)


def notes_for(excluded: int, excluded_anchors: int, drift: pd.DataFrame) -> list[str]:
    """What a reader must know to trust the tables, in words."""
    notes = []
    if excluded:
        notes.append(f"{excluded} INVALID cells left out (see their invalid_reasons).")
    if excluded_anchors:
        notes.append(f"{excluded_anchors} INVALID anchor runs left out of the drift bands.")
    if drift.empty or drift["drift_rel"].isna().all():
        notes.append("No session has two valid anchor runs: drift is unknown, so no difference is judged.")
    return notes


def analyse(
    measured: pd.DataFrame,
    anchors: pd.DataFrame,
    sessions: pd.DataFrame | None = None,
    equivalence: pd.DataFrame | None = None,
    final_corpus: str = FINAL_CORPUS,
    include_invalid: bool = False,
    extra_notes: Sequence[str] = (),
    include_reused: bool = False,
    confirming: ConfirmationCells | None = None,
    confidence: float = CONFIDENCE,
) -> Study:
    """The whole analysis over DataFrames (no store access), INVALID cells left out by default.

    Cells measured with repeated prompts (load.allow_repeats) are left out too
    unless `include_reused`, and a note says how many (analysis/clean.py).
    """
    reused_lines = [] if include_reused else reused_left_out(measured)
    measured, reused = split_reused(measured, include_reused)
    extra_notes = [*extra_notes, *filter(None, [reused_note(reused)])]
    medians, excluded = lever_medians(measured, include_invalid)
    drift, excluded_anchors = session_drift(anchors, include_invalid)
    named = [] if include_invalid else load.invalid_left_out(measured)
    named += [] if include_invalid else load.invalid_left_out(anchors, "left out of the drift bands")
    best = best_k(medians, drift, confidence)
    equivalence = equivalence if equivalence is not None else pd.DataFrame()
    final = final_levers(at_best_k(medians, best), drift, final_corpus, equivalence, confidence)
    confirmation = confirmation_of(final, confirming, measured, final_corpus, include_invalid)
    return Study(
        measured=measured,
        anchors=anchors,
        sessions=sessions if sessions is not None else pd.DataFrame(),
        equivalence=equivalence,
        medians=medians,
        drift=drift,
        best_k=best,
        final=final,
        table1=table1_effective(table1(final, confirmation), final, measured),
        speedup_geomean=speedup_geomean(final),
        excluded_invalid=excluded,
        excluded_invalid_anchors=excluded_anchors,
        final_corpus=final_corpus,
        confirmation=confirmation,
        confidence=confidence,
        notes=[
            *confidence_note(confidence),
            *extra_notes,
            *notes_for(excluded, excluded_anchors, drift),
            *named,
            *reused_lines,
        ],
    )


def scored_cells(
    row: Mapping[str, object], measured: pd.DataFrame, every: bool = False
) -> tuple[list[dict], list[dict]]:
    """The VALID cells a model's final lever and van were scored on (final_k_by_corpus's corpora at
    their K): (final's, van's); with `every`, INVALID ones too (those the scores left out)."""
    pairs = parse_k_by_corpus(str(row.get("final_k_by_corpus") or ""))
    corpora = {c for c, _ in pairs}
    valid = "valid" in measured and not every
    kept = measured[measured["valid"].fillna(False).astype(bool)] if valid else measured
    cells = kept[(kept["model"] == row.get("model")) & kept["corpus"].isin(corpora)].to_dict("records")
    mine = [c for c in cells if c["lever"] == row.get("final_lever") and (c["corpus"], c["k"]) in pairs]
    return mine, [c for c in cells if c["lever"] == "van"]


def table1_effective(table: pd.DataFrame, final: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """Table 1 with what its engines ran with (analysis/effective.py): the final lever as it ran (an
    NVFP4 lever whose every cell ran on Marlin is the W4A16 it was; a dynamic-K lever whose K never
    moved says 'fixed K in effect'), what else its scored cells differed in from van's, and what
    van's ran with: the van each x over van is over; and the INVALID cells of those two
    configurations that the scores left out (invalid_left_out: analysis/repeats.py invalid_flag)."""
    if table.empty or "final_k_by_corpus" not in final or "lever" not in measured:
        return table
    columns = ("final_lever", "also_differs", "van_ran_with", "invalid_left_out")
    table = table.astype(dict.fromkeys(columns, object))
    by_model = {r["model"]: r for r in final.to_dict("records")}
    for i, model in table["model"].items():
        row = by_model.get(model)
        if row is None or not isinstance(row.get("final_k_by_corpus"), str):
            continue
        mine, van = scored_cells(row, measured)
        if mine and row.get("final_lever") != "van":
            if all(is_marlin(c) for c in mine):
                table.loc[i, "final_lever"] = lever_shown(mine[0])
            if fixed := fixed_k_words(fixed_k(mine)):
                table.loc[i, "final_lever"] = f"{table.loc[i, 'final_lever']} ({fixed})"
            table.loc[i, "also_differs"] = also_differs(mine, van) or "nothing else"
        table.loc[i, "van_ran_with"] = ran_with(van) or "unknown (not in the engine log)"
        table.at[i, "invalid_left_out"] = scored_invalid(row, measured)
    return table


def scored_invalid(row: Mapping[str, object], measured: pd.DataFrame) -> str | None:
    """The INVALID cells of a model's final configuration and of van on the corpora it was scored on,
    left out of Table 1's x over van, in the one label's words; None where none was."""
    mine, van = scored_cells(row, measured, every=True)
    sides = [("van", *invalid_count(van))]
    if row.get("final_lever") != "van":
        sides.insert(0, (str(row.get("final_label") or row.get("final_lever")), *invalid_count(mine)))
    return invalid_flag(sides, left_out=True)


def confidence_note(confidence: float) -> list[str]:
    if confidence == CONFIDENCE:
        return []
    return [
        f"Intervals are at {confidence:.1%}, not {CONFIDENCE:.0%}: the grid added repeats look by "
        "look (grid.sequential), each look judged at Pocock's corrected confidence (analysis/sequential.py)."
    ]


def confirmation_of(
    final: pd.DataFrame,
    confirming: ConfirmationCells | None,
    selection: pd.DataFrame,
    final_corpus: str,
    include_invalid: bool,
) -> pd.DataFrame:
    """analysis/confirmation.py over the confirmation's own cells and the drift of their sessions."""
    if final.empty or "model" not in final:
        return pd.DataFrame(columns=CONFIRM_COLUMNS)
    if confirming is None or confirming.record is None:
        return confirmations(final, None, pd.DataFrame(), pd.DataFrame(), final_corpus)
    measured, _ = split_reused(confirming.measured, False)
    medians, _ = lever_medians(measured, include_invalid)
    drift, _ = session_drift(confirming.anchors, include_invalid)
    seen = prompts_seen(measured, selection)
    return confirmations(final, confirming.record, medians, drift, final_corpus, seen=seen, cells=measured)


def reused_left_out(measured: pd.DataFrame) -> list[str]:
    """One line per cell measured with repeated prompts (left out unless include_reused)."""
    rows = measured[reused_mask(measured)].to_dict("records")
    return [
        f"left out: {load.cell_label(r)} (cell {r.get('cell_key')}): {int(r['prompts_reused'])} measured "
        "requests reused a prompt its engine had served (load.allow_repeats)"
        for r in rows
    ]


def stored_confirmations(root: StoreRoot) -> list[Mapping]:
    """Every confirmation record in the store (grid/orchestrate/confirm.py); unreadable ones are
    skipped here (the report of their experiment names them)."""
    records = []
    for path in sorted(StoreLayout(root).confirmations_dir().glob("*.json")):
        try:
            record = json.loads(path.read_text())
            records.append({"models": [{"cell_keys": list(m["cell_keys"])} for m in record["models"]]})
        except (ValueError, KeyError, TypeError):
            continue
    return records


def load_study(
    root: StoreRoot,
    cell_keys: Collection[str] | None = None,
    final_corpus: str = FINAL_CORPUS,
    include_invalid: bool = False,
    confirmation_record: Mapping[str, object] | None = None,
    confidence: float = CONFIDENCE,
) -> Study:
    """Read the store (only `cell_keys` when given, with the anchors of their sessions) and analyse it.

    Only attempts whose files are whole are read (store.read.connect); each
    cell left out for a damaged file or failed attempts is named in the notes.
    """
    con = connect(root)
    measured = load.measured_cells(con, cell_keys)
    records = [confirmation_record] if confirmation_record is not None else []
    confirm_keys = {
        k for r in [*records, *stored_confirmations(root)] for m in r["models"] for k in m["cell_keys"]
    }
    # Every confirmation's cells are held out of the selection, whatever `cell_keys` says.
    measured = measured[~measured["cell_key"].isin(confirm_keys)]
    sessions = set(measured["session_id"]) if cell_keys is not None else None
    coverage = (
        []
        if cell_keys is None
        else [f"{len(measured)} of {len(cell_keys)} cells of the experiment are in the store."]
    )
    whole = (
        set(con.execute("SELECT DISTINCT cell_key FROM cells").df()["cell_key"])
        if has_view(con, "cells")
        else set()
    )
    coverage += load.left_out(con, whole, cell_keys)
    confirming = None
    if confirmation_record is not None:
        mine = {k for m in confirmation_record["models"] for k in m["cell_keys"]}  # type: ignore[attr-defined]
        confirm_measured = load.measured_cells(con, mine)
        confirm_anchors = load.anchor_runs(con, set(confirm_measured["session_id"]))
        confirming = ConfirmationCells(confirmation_record, confirm_measured, confirm_anchors)
    return analyse(
        measured,
        load.anchor_runs(con, sessions),
        load.sessions_table(con),
        load.equivalence_table(con),
        final_corpus,
        include_invalid,
        coverage,
        confirming=confirming,
        confidence=confidence,
    )

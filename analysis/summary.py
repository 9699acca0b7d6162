"""The per-cell summary table printed after a run.

Every cell a table leaves out is named below it, one line each, with why: a
damaged file, attempts that failed (latest_cells, from store.read.connect's
`attempts`), INVALID (the repeats table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from analysis.decision import judge
from analysis.drift import drift_band, session_drift
from analysis.load import invalid_left_out, left_out
from analysis.medians import lever_medians
from analysis.repeats import aggregate_repeats
from store.read import connect, has_view

COLUMNS = [
    "model",
    "corpus",
    "lever",
    "k",
    "output_tok_per_s",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "acceptance_rate",
    "draft_tokens_per_draft",
    "engine_ready_s",
    "n_ok",
    "n_errors",
]


def latest_cells(root: Path, session_id: str | None = None, checksums: bool = True) -> pd.DataFrame:
    """Latest ok attempt per cell (optionally of one session), with speedup over van.

    speedup_vs_van = output_tok_per_s / output_tok_per_s of the `van` cell with the
    same model, corpus and repeat (NaN when there is none). Only attempts whose
    files are whole count (`checksums=False`: sizes checked, not checksums);
    `frame.attrs["left_out"]` names each cell left out (damaged file, failed), one line each.
    """
    con = connect(root, checksums)
    if not has_view(con, "cells"):
        frame = pd.DataFrame(columns=[*COLUMNS, "speedup_vs_van"])
        frame.attrs["left_out"] = left_out(con, set(), session_id=session_id)
        return frame
    where = "WHERE session_id = $sid" if session_id else ""
    frame = con.execute(
        f"""SELECT * FROM cells {where}
            QUALIFY row_number() OVER (PARTITION BY cell_key ORDER BY attempt_id DESC) = 1""",
        {"sid": session_id} if session_id else {},
    ).df()
    measured = set(frame["cell_key"])
    if "anchor" in frame.columns:  # drift anchors are analysed apart (analysis of drift), not as cells
        frame = frame[frame["anchor"].isna()]
    if "replicate" in frame.columns:  # van replicates are the equivalence gate's noise floor
        frame = frame[~frame["replicate"].fillna(False).astype(bool)]
    van = frame[frame["lever"] == "van"][["model", "corpus", "repeat", "output_tok_per_s"]]
    frame = frame.merge(van, on=["model", "corpus", "repeat"], how="left", suffixes=("", "_van"))
    frame["speedup_vs_van"] = frame["output_tok_per_s"] / frame["output_tok_per_s_van"]
    frame = frame.sort_values(["model", "corpus", "lever", "k"]).reset_index(drop=True)
    # A store written by an older schema (or a synthetic one) may lack a figure: shown as "-".
    for name in (*COLUMNS, "bench_output_tok_per_s", "valid"):
        if name not in frame.columns:
            frame[name] = None
    frame.attrs["left_out"] = left_out(con, measured, session_id=session_id)
    return frame


def _fmt(value: object, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _validity(row: object) -> str:
    valid = getattr(row, "valid", None)
    if valid is None or (isinstance(valid, float) and pd.isna(valid)):
        return "-"
    return "VALID" if valid else "INVALID"


def render(frame: pd.DataFrame, console: Console | None = None, left: Sequence[str] | None = None) -> None:
    """The table, then a line per cell left out of it (`left`, default `frame.attrs["left_out"]`)."""
    table = Table(title="cells (latest ok attempt each)")
    headers = [
        "model",
        "corpus",
        "lever",
        "K",
        "out tok/s",
        "bench tok/s",
        "TTFT p50 ms",
        "TPOT p50 ms",
        "accept",
        "draft tok/draft",
        "step ms",
        "tok/step",
        "x van",
        "ready s",
        "ok/err",
        "valid",
    ]
    for header in headers:
        table.add_column(header, justify="right" if header not in ("model", "corpus", "lever") else "left")
    for row in frame.itertuples():
        table.add_row(
            row.model,
            row.corpus,
            row.lever,
            str(row.k or "-"),
            _fmt(row.output_tok_per_s),
            _fmt(getattr(row, "bench_output_tok_per_s", None)),
            _fmt(row.ttft_ms_p50),
            _fmt(row.tpot_ms_p50),
            _fmt(row.acceptance_rate, 2),
            _fmt(row.draft_tokens_per_draft, 2),
            _fmt(getattr(row, "chunk_gap_ms_p50", None), 1),
            _fmt(getattr(row, "tokens_per_chunk", None), 2),
            _fmt(row.speedup_vs_van, 2),
            _fmt(row.engine_ready_s, 0),
            f"{_fmt(row.n_ok, 0)}/{_fmt(row.n_errors, 0)}",
            _validity(row),
        )
    console = console or Console(width=160)
    console.print(table)
    console.print(
        "out tok/s: output tokens inside the steady-state window / its length; bench tok/s: "
        "completed tokens / first send to last completion (as vllm bench serve); step ms, tok/step: "
        "a stream's mean time between chunks in the window (median over streams) and tokens per chunk "
        "(one chunk per engine step)"
    )
    for row in frame.itertuples():
        if getattr(row, "valid", True) is False:
            console.print(f"INVALID {row.model}/{row.corpus}/{row.lever}: {row.invalid_reasons}")
        reused = getattr(row, "prompts_reused", None)
        if reused is not None and pd.notna(reused) and reused > 0:
            console.print(
                f"REPEATED PROMPTS {row.model}/{row.corpus}/{row.lever}: {int(reused)} measured requests "
                "reused a prompt the engine had served (load.allow_repeats); not comparable with clean cells"
            )
    for line in frame.attrs.get("left_out", []) if left is None else left:
        console.print(line, markup=False, highlight=False)


def x_van(medians: pd.DataFrame, drift: pd.DataFrame | None = None) -> dict[tuple, object]:
    """Per (model, corpus, lever, k) other than van: analysis.decision's judgement against van's repeats,
    beyond the drift band of the sessions both ran in (analysis.drift, from the sessions' anchor
    runs). Without anchor runs the band is unknown and nothing is judged (the rule fails closed).
    """
    out = {}
    van = medians[medians["lever"] == "van"].set_index(["model", "corpus"])
    for row in medians.itertuples(index=False):
        if row.lever != "van" and (row.model, row.corpus) in van.index:
            reference = van.loc[(row.model, row.corpus)]
            sessions = set(row.sessions) | set(reference["sessions"])
            band = drift_band(drift, sessions) if drift is not None and not drift.empty else math.nan
            out[(row.model, row.corpus, row.lever, row.k)] = judge(row.repeats, reference["repeats"], band)
    return out


def render_repeats(frame: pd.DataFrame, console: Console, anchors: pd.DataFrame | None = None) -> None:
    """Median and MAD over repeats (VALID cells only, saying how many were left out); x van, its
    interval and label beyond the drift band of `anchors` (analysis.load.anchor_runs)."""
    table_data, excluded = aggregate_repeats(frame)
    drift = session_drift(anchors)[0] if anchors is not None else None
    judged = (
        x_van(lever_medians(frame)[0], drift)
        if {"session_id", "output_tok_per_s"} <= set(frame.columns)
        else {}
    )
    table = Table(title="repeats: output tok/s in the window (VALID cells)")
    for header in ("model", "corpus", "lever", "K", "n", "median", "MAD", "x van [90% CI]", "label"):
        table.add_column(header)
    for row in table_data.itertuples():
        j = judged.get((row.model, row.corpus, row.lever, row.k))
        table.add_row(row.model, row.corpus, row.lever, str(row.k or "-"), str(row.n),
                      _fmt(row.median), _fmt(row.mad), j.interval_words() if j else "-",
                      j.label if j else "-")  # fmt: skip
    console.print(table)
    console.print(
        "x van: ratio of geometric means over repeats, its 90% t-interval (paired by session and repeat), "
        "judged beyond the drift band of the session's anchor runs (analysis/decision.py); "
        "without anchor runs, not judged"
    )
    if excluded:
        console.print(f"{excluded} INVALID cells left out (see invalid_reasons)")
        for line in invalid_left_out(frame):
            console.print(line, markup=False, highlight=False)

"""The per-cell summary table printed after a run.

Every cell a table leaves out is named below it, one line each, with why: a
damaged file, attempts that failed (latest_cells, from store.read.connect's
`attempts`), INVALID (the repeats table).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd
from rich.console import Console

from analysis import blocks, variance
from analysis.decision import judge
from analysis.drift import band_by_lag, session_drift, split_anchors
from analysis.effective import (
    EFFECTIVE,
    also_differs,
    asked_vs_ran,
    fixed_k,
    fixed_k_words,
    is_marlin,
    lever_shown,
    ran_with,
)
from analysis.load import LATEST, anchor_runs, cell_label, invalid_left_out, left_out
from analysis.medians import lever_medians
from analysis.repeats import aggregate_repeats, invalid_count, invalid_flag, is_invalid
from store.read import connect, has_view
from vocab.console import Col, make_console, markdown_table, print_table

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
            QUALIFY {LATEST.format(key="cell_key")}""",
        {"sid": session_id} if session_id else {},
    ).df()
    measured = set(frame["cell_key"])
    frame, _ = split_anchors(frame)  # drift anchors are analysed apart (analysis of drift), not as cells
    if "replicate" in frame.columns:  # van replicates are the equivalence gate's noise floor
        frame = frame[~frame["replicate"].fillna(False).astype(bool)]
    if "valid" not in frame.columns:
        frame["valid"] = None
    for name in EFFECTIVE:  # a store written before the engine log was read: unknown
        if name not in frame.columns:
            frame[name] = None
    # van's validity comes along: a ratio over an INVALID van cell says so on its row (pair_flag);
    # and so does what van's engine ran with: the row names what else differed (analysis/effective.py).
    van = frame[frame["lever"] == "van"][
        ["model", "corpus", "repeat", "output_tok_per_s", "valid", *EFFECTIVE]
    ]
    frame = frame.merge(van, on=["model", "corpus", "repeat"], how="left", suffixes=("", "_van"))
    frame["speedup_vs_van"] = frame["output_tok_per_s"] / frame["output_tok_per_s_van"]
    frame = frame.sort_values(["model", "corpus", "lever", "k"]).reset_index(drop=True)
    # A store written by an older schema (or a synthetic one) may lack a figure: shown as "-".
    for name in (*COLUMNS, "bench_output_tok_per_s", "valid"):
        if name not in frame.columns:
            frame[name] = None
    frame = with_effective(frame)
    frame.attrs["left_out"] = left_out(con, measured, session_id=session_id)
    # The drift anchors of the frame's sessions: the exports judge each configuration's x van by them.
    frame.attrs["anchors"] = anchor_runs(con, set(frame["session_id"]))
    return frame


def van_side(row: dict) -> dict:
    """The van cell a row's speedup_vs_van is over, as analysis/effective.py reads a side (its
    engine_* columns came with the merge, suffixed _van)."""
    return {"lever": "van", **{name: row.get(f"{name}_van") for name in EFFECTIVE}}


def pair_differs(row: dict) -> str:
    """What else differed between a cell and its van cell ('also differs: model runner V2 vs V1'); ''."""
    ratio = row.get("speedup_vs_van")
    if ratio is None or pd.isna(ratio) or row.get("lever") == "van":
        return ""
    return also_differs([row], [van_side(row)])


def with_effective(frame: pd.DataFrame) -> pd.DataFrame:
    """Per cell, what its engine ran with beside what it asked (analysis/effective.py): lever_shown
    (an NVFP4 cell on Marlin is the W4A16 it ran), asked_vs_ran, dynk_fixed_k (the one K every step
    of a dynamic-K cell used, null where K moved or was not recorded), and
    speedup_vs_van_also_differs / speedup_vs_van_over (what van's engine ran with)."""
    rows = frame.to_dict("records")
    out = frame.copy()
    out["lever_shown"] = [lever_label(r) for r in rows]
    out["asked_vs_ran"] = ["; ".join(asked_vs_ran(r)) or None for r in rows]
    out["dynk_fixed_k"] = pd.array([fixed_k([r]) for r in rows], dtype="Int64")
    out["speedup_vs_van_also_differs"] = [pair_differs(r) or None for r in rows]
    out["speedup_vs_van_over"] = [
        ran_with([van_side(r)]) or None if pair_verdict(r) and r.get("lever") != "van" else None for r in rows
    ]
    return out


def lever_label(row: dict) -> str:
    """The lever as the tables show it: 'W4A16 (w4a4 on Marlin)' for an NVFP4 cell run as W4A16, and
    a dynamic-K cell whose K never moved says so: 'dynk (fixed K in effect: every step K=12)'."""
    fixed = fixed_k_words(fixed_k([row]))
    return lever_shown(row) + (f" ({fixed})" if fixed else "")


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


# The cells table's columns, and which go first when the console is too narrow for all of them
# (vocab/console.py): the labels, out tok/s, x van and the VALID flag always stay, whole.
CELL_COLUMNS = [
    Col("model", "left"),
    Col("corpus", "left"),
    Col("lever", "left"),
    Col("K"),
    Col("out tok/s", no_wrap=False),
    Col("bench tok/s", no_wrap=False),
    Col("TTFT p50 ms", no_wrap=False),
    Col("TPOT p50 ms", no_wrap=False),
    Col("accept", no_wrap=False),
    Col("draft tok/draft", no_wrap=False),
    Col("step ms", no_wrap=False),
    Col("tok/step", no_wrap=False),
    Col("x van", no_wrap=False),
    Col("ready s", no_wrap=False),
    Col("ok/err", no_wrap=False),
    Col("valid", "left"),
]
CELL_DROP = [
    "draft tok/draft",
    "tok/step",
    "step ms",
    "ready s",
    "bench tok/s",
    "ok/err",
    "accept",
    "TPOT p50 ms",
    "TTFT p50 ms",
]


def cell_rows(frame: pd.DataFrame) -> list[list[str]]:
    """The cells table's rows (CELL_COLUMNS), as text."""
    return [
        [
            row.model,
            row.corpus,
            lever_label(row._asdict()),
            str(row.k or "-"),
            _fmt(row.output_tok_per_s),
            _fmt(getattr(row, "bench_output_tok_per_s", None)),
            _fmt(row.ttft_ms_p50),
            _fmt(row.tpot_ms_p50),
            _fmt(row.acceptance_rate, 2),
            _fmt(row.draft_tokens_per_draft, 2),
            _fmt(getattr(row, "chunk_gap_ms_p50", None), 1),
            _fmt(getattr(row, "tokens_per_chunk", None), 2),
            _x_van_cell(row),
            _fmt(row.engine_ready_s, 0),
            f"{_fmt(row.n_ok, 0)}/{_fmt(row.n_errors, 0)}",
            _validity(row),
        ]
        for row in frame.itertuples()
    ]


def _x_van_cell(row: object) -> str:
    """One cell's ratio to van's is one pair: never judged, said in the same row, and so is an
    INVALID cell on either side of it (pair_flag)."""
    text = _fmt(getattr(row, "speedup_vs_van", None), 2)
    if text == "-":
        return text
    values = row._asdict() if hasattr(row, "_asdict") else vars(row)
    flag = pair_flag(values)
    differs = pair_differs(values)
    return text + " n=1 not judged" + (f", {flag}" if flag else "") + (f", {differs}" if differs else "")


def pair_flag(row: dict) -> str | None:
    """Which side of speedup_vs_van is INVALID, in words (analysis/repeats.py invalid_flag: 'van cell
    INVALID', 'this cell INVALID', 'this cell and van cell INVALID'); None when neither is or there is
    no ratio."""
    ratio = row.get("speedup_vs_van")
    if ratio is None or pd.isna(ratio):
        return None
    van = is_invalid(row.get("valid_van")) and row.get("lever") != "van"
    return invalid_flag([("this", int(is_invalid(row.get("valid"))), 1), ("van", int(van), 1)])


def render(frame: pd.DataFrame, console: Console | None = None, left: Sequence[str] | None = None) -> None:
    """The table, then a line per cell left out of it (`left`, default `frame.attrs["left_out"]`).

    At the console's width (vocab/console.py: the terminal's, or LOG_WIDTH in a log): columns
    that do not fit are left out (CELL_DROP, named below the table), never cut.
    """
    console = console or make_console()
    print_table(
        console,
        "cells (latest ok attempt each)",
        CELL_COLUMNS,
        cell_rows(frame),
        CELL_DROP,
        "`python -m grid summary format=csv`",
    )
    console.print(
        "out tok/s: output tokens inside the steady-state window / its length; bench tok/s: "
        "completed tokens / first send to last completion (as vllm bench serve); step ms, tok/step: "
        "a stream's mean time between chunks in the window (median over streams) and tokens per chunk "
        "(one chunk per engine step); x van: this cell over van's of the same corpus and repeat, one pair "
        "(n=1): not judged (the repeats table, with grid.repeats >= 2, judges it); 'also differs': what "
        "else the two engines ran with, beyond the lever (analysis/effective.py)"
    )
    for line in van_lines(frame):
        console.print(line, markup=False, highlight=False)
    for row in frame.itertuples():
        if getattr(row, "valid", True) is False:
            console.print(f"INVALID {row.model}/{row.corpus}/{row.lever}: {row.invalid_reasons}")
        asked = getattr(row, "asked_vs_ran", None)
        if isinstance(asked, str) and asked:
            console.print(
                f"RAN OTHER THAN ASKED {row.model}/{row.corpus}/{row.lever}: {asked}",
                markup=False,
                highlight=False,
            )
        reused = getattr(row, "prompts_reused", None)
        if reused is not None and pd.notna(reused) and reused > 0:
            console.print(
                f"REPEATED PROMPTS {row.model}/{row.corpus}/{row.lever}: {int(reused)} measured requests "
                "reused a prompt the engine had served (load.allow_repeats); not comparable with clean cells"
            )
    for line in frame.attrs.get("left_out", []) if left is None else left:
        console.print(line, markup=False, highlight=False)
    render_launch_tables(frame, console)


def van_lines(frame: pd.DataFrame) -> list[str]:
    """Which van each x van is over: per model and corpus, what its van cells' engines ran with."""
    if frame.empty or "lever" not in frame:
        return []
    van = frame[frame["lever"] == "van"]
    lines = []
    for (model, corpus), group in van.groupby(["model", "corpus"], sort=True):
        if ran := ran_with(group.to_dict("records")):
            lines.append(f"x van over {model}/{corpus}: van ran with {ran}")
    return lines


# The variance table at the console: one table per model (its name in the title), so that with the
# lever configuration in one column the whole table, "missing because" included (the note points
# to it), fits 80 columns; the headers are short and the note below says what each one is.
VARIANCE_COLUMNS = [
    Col("config", "left"),
    Col("engine sd% (df)", no_wrap=False),
    Col("launch sd% (df)", no_wrap=False),
    Col("session sd% (df)", no_wrap=False),
    Col("run sd% (df)", no_wrap=False),
    Col("b/l/s"),
    Col("missing because", "left", no_wrap=False, fold=True, want=14),
]
VARIANCE_CONSOLE_NOTE = (
    "engine = within one engine launch (block to block), launch = between launches of a session, "
    "session = between sessions, run = engine and launch together; b/l/s = blocks/launches/sessions. "
)


def variance_console_rows(components: pd.DataFrame) -> dict[str, list[list[str]]]:
    """Per model: its configurations' rows of VARIANCE_COLUMNS (from analysis.variance.display_rows)."""
    out: dict[str, list[list[str]]] = {}
    for row, shown in zip(components.itertuples(index=False), variance.display_rows(components), strict=True):
        out.setdefault(str(row.model), []).append([blocks.config_label(row.lever, row.k), *shown[3:]])
    return out


# One table per model as for the variance components (the model in the title), so the ratio, its
# interval, the order effect and the verdict fit 80 columns; the launch config goes first when not.
PAIR_COLUMNS = [
    Col("launch config", "left", no_wrap=False),
    Col("lever / reference", "left", no_wrap=False),
    Col("ratio [95% CI]", "left", no_wrap=False, want=16),
    Col("interval over (df)", "left", no_wrap=False),
    Col("blocks"),
    Col("launches"),
    Col("order effect [95% CI]", "left", no_wrap=False, want=16),
    Col("verdict", "left", no_wrap=False, want=12),
]
PAIR_EXPORT_HEADERS = [*blocks.PAIR_HEADERS, "verdict"]


def block_verdict(lo: float, hi: float) -> str:
    """A paired-by-block ratio's verdict: never judged by analysis/decision.py's rule (it judges repeats
    against van beyond the drift band); what its interval says of 1 is given beside."""
    if pd.isna(lo) or pd.isna(hi):
        return "not judged (no interval)"
    where = "above 1" if lo > 1 else "below 1" if hi < 1 else "holds 1"
    return f"not judged (interval {where})"


def block_verdicts(pairs: pd.DataFrame) -> list[str]:
    return [block_verdict(lo, hi) for lo, hi in zip(pairs["ci_lo"], pairs["ci_hi"], strict=True)]


def launch_tables(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(analysis.variance's components, analysis.blocks' paired-by-block ratios) of latest_cells'
    `frame`; None when no cell records its engine launch (a store written before launches were)."""
    if "engine_launch_id" not in frame or not frame["engine_launch_id"].notna().any():
        return None
    cells = frame.drop_duplicates("cell_key") if "cell_key" in frame else frame
    return variance.variance_components(cells), blocks.paired_by_block(cells)


def render_launch_tables(frame: pd.DataFrame, console: Console) -> None:
    """The variance components per model and lever and, where levers shared launches, the
    paired-by-block ratios; nothing for a store whose cells record no engine launch."""
    tables = launch_tables(frame)
    if tables is None:
        return
    components, pairs = tables
    if components.empty:
        console.print(f"variance components: {components.attrs.get('note', 'none')}")
    else:
        for model, rows in variance_console_rows(components).items():
            print_table(console, f"variance components of {model}: ln out tok/s", VARIANCE_COLUMNS, rows)
        console.print(VARIANCE_CONSOLE_NOTE + variance.DISPLAY_NOTE, markup=False, highlight=False)
    if not pairs.empty:
        by_model: dict[str, list[list[str]]] = {}
        for row, verdict in zip(blocks.display_rows(pairs), block_verdicts(pairs), strict=True):
            by_model.setdefault(row[0], []).append([*row[1:], verdict])
        for model, rows in by_model.items():
            title = f"paired by block, {model} (levers sharing a launch)"
            print_table(console, title, PAIR_COLUMNS, rows, ["launch config"])
        console.print(blocks.PAIR_NOTE, markup=False, highlight=False)


def _records(table: pd.DataFrame) -> list[dict]:
    """A table as JSON records (NaN as null, tuples as lists)."""
    return json.loads(table.to_json(orient="records"))


# `python -m grid summary format=json|csv|md`: one record per cell, these fields (null where the
# store has none); the store's every column is in the DuckDB views (store.read.connect). No ratio
# goes out alone: each has its n, interval and verdict beside it (RATIO_COMPANIONS; a test scans
# every export for them). speedup_vs_van is one cell over one van cell (one pair: n=1, no interval,
# never judged); x_van is the configuration's ratio over its repeats, judged by analysis/decision.py.
# Each ratio also says what else its two sides' engines differed in (_also_differs, null where
# nothing did) and what van's engines ran with (_over): analysis/effective.py.
RATIO_COMPANIONS = {
    "speedup_vs_van": ("speedup_vs_van_n", "speedup_vs_van_ci_lo", "speedup_vs_van_ci_hi",
                       "speedup_vs_van_verdict", "speedup_vs_van_invalid", "speedup_vs_van_also_differs",
                       "speedup_vs_van_over"),
    "x_van": ("x_van_n", "x_van_n_van", "x_van_ci_lo", "x_van_ci_hi", "x_van_label", "x_van_verdict",
              "x_van_noise_terms", "x_van_also_differs", "x_van_over", "x_van_invalid"),
}  # fmt: skip
EXPORT_COLUMNS = [
    "label",
    "cell_key",
    "attempt_id",
    "session_id",
    "model",
    "corpus",
    "lever",
    "lever_shown",
    "k",
    "repeat",
    "output_tok_per_s",
    "bench_output_tok_per_s",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "acceptance_rate",
    "draft_tokens_per_draft",
    "chunk_gap_ms_p50",
    "tokens_per_chunk",
    "speedup_vs_van",
    *RATIO_COMPANIONS["speedup_vs_van"],
    "x_van",
    *RATIO_COMPANIONS["x_van"],
    "engine_ready_s",
    "n_ok",
    "n_errors",
    "valid",
    "invalid_reasons",
    "prompts_reused",
    "asked_vs_ran",
    "dynk_fixed_k",
    *EFFECTIVE,
]
ONE_PAIR = "not judged (n<2): one cell over one van cell; x_van judges the configuration's repeats"


def pair_verdict(row: dict) -> str | None:
    """speedup_vs_van's verdict: one pair is never judged (and an INVALID cell says so too)."""
    ratio = row.get("speedup_vs_van")
    if ratio is None or pd.isna(ratio):
        return None
    flag = pair_flag(row)
    return ONE_PAIR + (f"; {flag}" if flag else "")


def x_van_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Per cell: its configuration's x van over the repeats (x_van and its companions), judged beyond
    the drift band of `frame.attrs["anchors"]`; null for van and where no van configuration matches."""
    columns = ["x_van", *RATIO_COMPANIONS["x_van"]]
    needed = {"session_id", "output_tok_per_s", "model", "corpus", "lever", "k"}
    if frame.empty or not needed <= set(frame.columns):
        return pd.DataFrame(index=frame.index, columns=columns)
    anchors = frame.attrs.get("anchors")
    drift = session_drift(anchors)[0] if anchors is not None else None
    judged = x_van(lever_medians(frame)[0], drift)
    rows = []
    for key in zip(frame["model"], frame["corpus"], frame["lever"], frame["k"], strict=True):
        j = next((v for k, v in judged.items() if k[:3] == key[:3] and _same_k(k[3], key[3])), None)
        if j is None:
            rows.append(dict.fromkeys(columns))
            continue
        differs, over = config_effective(frame, *key)
        figures = (j.ratio, j.n_value, j.n_reference, j.lo, j.hi, j.label, j.words(), j.noise_terms)
        flag = config_invalid(frame, *key)
        rows.append(dict(zip(columns, (*figures, differs or None, over or None, flag), strict=True)))
    return pd.DataFrame(rows, index=frame.index, columns=columns)


def _config_rows(frame: pd.DataFrame, model: str, corpus: str, lever: str, k: object = None) -> list[dict]:
    """The cells of one configuration (any K for k None) that its x van is judged on (not INVALID)."""
    rows = frame[(frame["model"] == model) & (frame["corpus"] == corpus) & (frame["lever"] == lever)]
    if k is not None:
        rows = rows[[_same_k(v, k) for v in rows["k"]]]
    if "valid" in rows:
        rows = rows[[not is_invalid(v) for v in rows["valid"]]]
    return rows.to_dict("records")


def config_invalid(frame: pd.DataFrame, model: str, corpus: str, lever: str, k: object) -> str | None:
    """A configuration's x van is judged on VALID cells only: its INVALID cells and van's that were
    left out of it, in the one label's words (analysis/repeats.py invalid_flag); None where none was."""
    if "valid" not in frame:
        return None
    rows = frame[(frame["model"] == model) & (frame["corpus"] == corpus)]
    same_k = pd.Series([_same_k(v, k) for v in rows["k"]], index=rows.index, dtype=bool)
    mine = rows[(rows["lever"] == lever) & same_k].to_dict("records")
    van = rows[rows["lever"] == "van"].to_dict("records")
    sides = [(blocks.config_label(lever, k), *invalid_count(mine)), ("van", *invalid_count(van))]
    return invalid_flag(sides, left_out=True)


def config_effective(frame: pd.DataFrame, model: str, corpus: str, lever: str, k: object) -> tuple[str, str]:
    """A configuration's x van: what else its engines differed in from van's ('' where nothing did),
    and what van's engines ran with (analysis/effective.py)."""
    van = _config_rows(frame, model, corpus, "van")
    return also_differs(_config_rows(frame, model, corpus, lever, k), van), ran_with(van)


def config_lever_label(frame: pd.DataFrame, model: str, corpus: str, lever: str, k: object) -> str:
    """lever_label of a configuration: W4A16 where every cell ran on Marlin, 'fixed K in effect' where
    no cell's K moved; the lever's name otherwise."""
    rows = _config_rows(frame, model, corpus, lever, k) if "lever" in frame else []
    if not rows:
        return lever
    name = lever_shown(rows[0]) if all(is_marlin(r) for r in rows) else lever
    fixed = fixed_k_words(fixed_k(rows))
    return name + (f" ({fixed})" if fixed else "")


def _same_k(a: object, b: object) -> bool:
    return (pd.isna(a) and pd.isna(b)) or a == b  # type: ignore[arg-type]


def export_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """latest_cells' frame as exported: EXPORT_COLUMNS, one row per cell."""
    out = frame.copy() if "lever_shown" in frame else with_effective(frame)
    pairs = out.to_dict("records")
    out["speedup_vs_van_n"] = [None if pair_verdict(r) is None else 1 for r in pairs]
    out["speedup_vs_van_ci_lo"] = out["speedup_vs_van_ci_hi"] = None  # one pair: no interval
    out["speedup_vs_van_verdict"] = [pair_verdict(r) for r in pairs]
    out["speedup_vs_van_invalid"] = [pair_flag(r) for r in pairs]
    out[["x_van", *RATIO_COMPANIONS["x_van"]]] = x_van_columns(frame)
    for name in EXPORT_COLUMNS:
        if name not in out.columns:
            out[name] = None
    for name in ("speedup_vs_van_n", "x_van_n", "x_van_n_van"):  # counts stay integers (null where none)
        out[name] = pd.array(out[name].astype(float), dtype="Int64")
    out["label"] = [
        cell_label(row) for row in out[["model", "lever", "k", "corpus", "repeat"]].to_dict("records")
    ]
    return out[EXPORT_COLUMNS].reset_index(drop=True)


def export(frame: pd.DataFrame, fmt: str, out: TextIO) -> None:
    """Write latest_cells' `frame` to `out` as JSON ({"cells": [...], "left_out": [...]}), CSV
    (a header, then one row per cell; the cells left out go to stderr, one line each) or Markdown
    (`md`: a pipe table, then the cells left out as a list). Where the cells record their engine
    launch, JSON adds "variance_components" and "paired_by_block" (launch_tables' rows) and Markdown
    their tables; CSV stays one table."""
    table = export_frame(frame)
    left = list(frame.attrs.get("left_out", []))
    if fmt == "csv":
        table.to_csv(out, index=False)
        for line in left:
            print(line, file=sys.stderr)
        return
    launches = launch_tables(frame)
    if fmt == "md":  # a table to paste into an issue or a PR; the cells left out listed below it
        out.write(markdown_table(list(table.columns), table.itertuples(index=False)))
        out.write("".join(f"\n- {line}" for line in left) + ("\n" if left else ""))
        if launches is not None and not launches[0].empty:
            out.write("\nvariance components: ln out tok/s\n\n")
            out.write(markdown_table(variance.DISPLAY_HEADERS, variance.display_rows(launches[0])))
        if launches is not None and not launches[1].empty:
            out.write("\npaired by block (levers sharing a launch)\n\n")
            rows = blocks.display_rows(launches[1])
            verdicts = block_verdicts(launches[1])
            out.write(
                markdown_table(PAIR_EXPORT_HEADERS, [[*r, v] for r, v in zip(rows, verdicts, strict=True)])
            )
        return
    document: dict[str, object] = {"cells": _records(table), "left_out": left}
    if launches is not None:  # only a store whose cells record their engine launch
        document["variance_components"] = _records(launches[0])
        document["paired_by_block"] = _records(launches[1].assign(verdict=block_verdicts(launches[1])))
    json.dump(document, out, indent=2)
    out.write("\n")


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
            # At the comparison's own lag, as the tune and Table 1 judge it (a lag-1 band is stricter
            # for repeats paired in one session, and the table's label disagreed with the study's).
            band = band_by_lag(drift, sessions) if drift is not None and not drift.empty else math.nan
            out[(row.model, row.corpus, row.lever, row.k)] = judge(row.repeats, reference["repeats"], band)
    return out


# The interval and its label wrap at their spaces (each word whole); the labels and n do not. On a
# narrow console MAD, then the median go first: the interval and its label are the table's point.
REPEAT_COLUMNS = [
    Col("model", "left"),
    Col("corpus", "left"),
    Col("lever", "left"),
    Col("K"),
    Col("n"),
    Col("median", no_wrap=False),
    Col("MAD", no_wrap=False),
    Col("x van [90% CI]", "left", no_wrap=False, want=16),
    Col("label", "left", no_wrap=False, want=12),
]


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
    rows = []
    for row in table_data.itertuples():
        j = judged.get((row.model, row.corpus, row.lever, row.k))
        differs = config_effective(frame, row.model, row.corpus, row.lever, row.k)[0] if j else ""
        flag = config_invalid(frame, row.model, row.corpus, row.lever, row.k) if j else None
        label = "; ".join(filter(None, [j.label, flag, differs])) if j else "-"
        lever = config_lever_label(frame, row.model, row.corpus, row.lever, row.k)
        rows.append([row.model, row.corpus, lever, str(row.k or "-"), str(row.n), _fmt(row.median),
                     _fmt(row.mad), j.interval_words() if j else "-", label])  # fmt: skip
    print_table(
        console, "repeats: output tok/s in the window (VALID cells)", REPEAT_COLUMNS, rows, ["MAD", "median"]
    )
    console.print(
        "x van: ratio of geometric means over repeats, its 90% t-interval (paired by session and repeat), "
        "judged beyond the drift band of the session's anchor runs (analysis/decision.py); "
        "without anchor runs, not judged"
    )
    if excluded:
        console.print(f"{excluded} INVALID cells left out (see invalid_reasons)")
        for line in invalid_left_out(frame):
            console.print(line, markup=False, highlight=False)

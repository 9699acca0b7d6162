"""`python -m grid status`: the grid's cells as the store sees them (format=json: the same, as JSON)."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import Any, NamedTuple

import pandas as pd
from rich.console import Console

from analysis.gpu_time import share_line
from analysis.load import cell_label
from analysis.summary import latest_cells
from grid.config.compose import check_run_mode, compose_config, names_a_grid, pop_format
from grid.config.expand import expand, to_config
from grid.orchestrate.lease import unreadable_leases
from grid.orchestrate.ledger import (
    ANCHOR_MARK,
    COUNTED,
    DAMAGED,
    DONE,
    INVALID,
    MEASURED,
    PENDING,
    build_ledger,
    counts_words,
    resume_fate,
)
from grid.plan.anchor import anchor_cells
from store.fs import redact
from store.lease import all_leases
from vocab.console import Col, make_console, print_table, write_rows
from vocab.paths import existing_store

# "cells not done": the label and status stay whole; the key goes first at a narrow console (a label
# names the cell for run.force as well), the last error wraps.
NOT_DONE_COLUMNS = [
    Col("cell", "left"),
    Col("key", "left"),
    Col("status", "left"),
    Col("attempts"),
    Col("last error", "left", no_wrap=False, fold=True),
]


# "cells not done" shows this many (a grid of thousands fits a screen); format=json / csv list all.
NOT_DONE_SHOWN = 20


class Named(NamedTuple):
    """A cell as status names it: its key and its label."""

    key: str
    label: str


def store_cells(ledger: Any, measured: pd.DataFrame) -> list[Named]:
    """Every cell the store holds, named by the label its manifests record, else by its measured
    row's fields (`measured`: latest_cells; stores written before labels were recorded), else by its key."""
    from_rows: dict[str, str] = {}
    if not measured.empty:
        fields = measured[["cell_key", "model", "lever", "k", "corpus", "repeat"]].to_dict("records")
        from_rows = {row["cell_key"]: cell_label(row) for row in fields}
    named = [Named(key, state.label or from_rows.get(key) or key) for key, state in ledger.states.items()]
    # Drift-anchor runs are not cells of the grid (`run` counts them apart): left out here too.
    return sorted((n for n in named if ANCHOR_MARK not in n.label), key=lambda n: (n.label, n.key))


class Scope(NamedTuple):
    """What status counts: the grid's cells, its anchor runs, and the rest the store holds."""

    cells: list[Named]
    anchors: list[str]  # anchor-run keys
    others: list[str]  # keys of cells of another grid or experiment (none without a grid)


def scope_of(config: Any, ledger: Any, cells: list[Named], grid: bool) -> Scope:
    """The grid's anchor runs (its own anchor cells, else every one the store holds) and, for a
    grid, what else the store holds."""
    if not grid:
        return Scope(cells, ledger.anchor_keys(), [])
    anchors = [c.key for c in anchor_cells(config) or ()]
    mine = {c.key for c in cells} | set(anchors) | set(ledger.anchor_keys())
    return Scope(cells, anchors, [key for key in ledger.states if key not in mine])


def model_of(label: str) -> str:
    """A cell label's model: its first part (`tiny/suffix-k8/chat_bench/r0`)."""
    return label.split("/", 1)[0]


def keys_by_model(cells: list[Named]) -> dict[str, list[str]]:
    """The cells' keys by model (model_of their label), in the cells' order."""
    models: dict[str, list[str]] = {}
    for cell in cells:
        models.setdefault(model_of(cell.label), []).append(cell.key)
    return models


def by_model(ledger: Any, cells: list[Named], pending: bool) -> list[list[str]]:
    """One row per model: the model, then its cells' count in each state."""
    rows = []
    for model, keys in keys_by_model(cells).items():
        counts = ledger.counts(keys, pending)
        rows.append([model, str(len(keys)), *(f"{counts[s]:,}" for s in counts)])
    return rows


def elsewhere_words(ledger: Any, scope: Scope, root: Any) -> str | None:
    """'the store also holds 4 cells of another grid or experiment (done 3, invalid 1): ...'."""
    if not scope.others:
        return None
    counts = ledger.counts(scope.others, pending=False)
    said = ", ".join(f"{state} {n}" for state, n in counts.items() if n)
    return (
        f"the store also holds {plural(len(scope.others), 'cell')} of another grid or experiment ({said}): "
        f"`python -m grid status paths.store={redact(str(root))}` lists every cell it holds"
    )


def plural(n: int, one: str) -> str:
    return f"{n:,} {one}{'' if n == 1 else 's'}"


def status(overrides: list[str], console: Console | None = None, checksums: bool = True) -> int:
    """Print done / invalid / failed / interrupted / damaged / pending counts, each cell's last error,
    every damaged file by name, the cells other drivers hold leases on (and their owners),
    and the GPU time share; with `format=json`, one JSON object on stdout instead (status_record).

    Of the grid the overrides name (`experiment=...`, `grid.*`); with none, of every cell the store
    holds (`paths.store` alone), which has no pending cells to count.

    A cell is done only if its files are whole: sizes and sha256 checksums as
    recorded (`checksums=False`, `status --quick`: sizes only).
    """
    fmt, overrides = pop_format(overrides, ("table", "json", "csv", "md"))
    cfg = compose_config(overrides)
    check_run_mode(cfg)
    config = to_config(cfg)
    root = existing_store(config.paths.store, config.paths.store_options)
    ledger = build_ledger(root, checksums)
    # Read once: with checksums it hashes every file (store_cells names by it, the GPU share counts it).
    measured = latest_cells(root, checksums=checksums)
    scope = config.name if names_a_grid(overrides) else None
    if scope is None:
        cells = store_cells(ledger, measured)
    else:
        cells = [Named(c.key, c.label) for c in expand(config)]
    labels = {c.key: c.label for c in cells}
    where = scope_of(config, ledger, cells, scope is not None)
    if fmt == "json":
        json.dump(status_record(scope, where, ledger, root, checksums), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if fmt in ("csv", "md"):  # every cell, one row each, as format=json's "cells"
        record = status_record(scope, where, ledger, root, checksums)["cells"]
        headers = ["label", "key", "status", "attempts", "last_error"]
        write_rows(fmt, headers, [[c[h] for h in headers] for c in record], sys.stdout)
        return 0
    console = console or make_console()
    damaged = {str(d): d for d in ledger.damaged}
    for problem in ledger.problems:
        label = labels.get(damaged[problem].cell_key) if problem in damaged else None
        console.print(f"[yellow]store:[/] {f'{label}: ' if label else ''}{problem}")
    grid = scope is not None
    invalid_note = invalid_words(ledger, cells, config.run.keep_invalid, config.run.invalid_reruns)
    what = (
        f"experiment {scope}"
        if grid
        else f"store {redact(str(root))} (all it holds; experiment=... for a grid's)"
    )
    counts = ledger.counts([c.key for c in cells], pending=grid)
    anchors = ledger.counts(where.anchors, pending=grid)
    notes = {INVALID: invalid_note, DAMAGED: resume_fate(DAMAGED)}
    console.print(f"{what}: {counts_words(counts, anchors, notes)}")
    if len(cells) > 1:
        states = [s for s in COUNTED if grid or s != PENDING]
        columns = [Col("model", "left"), Col("cells"), *(Col(s) for s in states)]
        print_table(
            console, "cells by model and state", columns, by_model(ledger, cells, grid), [], "format=json"
        )
    if (line := elsewhere_words(ledger, where, root)) is not None:
        console.print(line)
    now = time.time()
    for lease in all_leases(root):
        # Of the store's cells, a lease on one with no attempt yet is named by its key.
        if (label := labels.get(lease.cell_key, None if scope else lease.cell_key)) is None:
            continue
        if (why := lease.stale(now)) is not None:  # as `run` decides it: expired, or its pid gone here
            after = (
                "the next run removes it"
                if ledger.status(lease.cell_key) in MEASURED
                else "the next run takes it over"
            )
            console.print(
                f"[yellow]stale lease[/] {label}: {lease.holder()}, {why} (no driver holds it; {after})"
            )
        else:
            console.print(
                f"leased: {label}: being measured by {lease.holder()}, "
                f"lease renewed until {lease.expires_at - now:,.0f} s from now"
            )
    for bad in unreadable_leases(root):
        if (label := labels.get(bad.cell_key, None if scope else bad.cell_key)) is not None:
            gone = ledger.status(bad.cell_key) in MEASURED  # then removed, not taken over
            console.print(f"[yellow]unreadable lease[/] {label}: {bad.words(config.run.lease_s, gone)}")
    older = (
        f"; {ledger.footer_only} older attempts record no checksums: their Parquet footers checked"
        if ledger.footer_only
        else ""
    )
    console.print(
        ("files checked: sizes and sha256 checksums" if checksums else "files checked: sizes only (--quick)")
        + older
    )
    if not measured.empty and (
        line := share_line(measured[measured["cell_key"].isin({c.key for c in cells})])
    ):
        console.print(line)
    rows = []
    for cell in cells:
        state = ledger.states.get(cell.key)
        if state is None or state.status != DONE:
            rows.append([cell.label, cell.key, ledger.status(cell.key), str(state.attempts if state else 0),
                         last_error(state)])  # fmt: skip
    if rows:
        title = (
            "cells not done" if len(rows) <= NOT_DONE_SHOWN else f"cells not done: the first {NOT_DONE_SHOWN}"
        )
        print_table(console, title, NOT_DONE_COLUMNS, rows[:NOT_DONE_SHOWN], ["key"], "format=json")
        if len(rows) > NOT_DONE_SHOWN:
            console.print(
                f"... and {len(rows) - NOT_DONE_SHOWN:,} more not done (every one: format=json or format=csv)"
            )
    return 0


def invalid_words(ledger: Any, cells: list[Named], keep_invalid: bool, invalid_reruns: int | None) -> str:
    """What resume does with the INVALID cells (grid/orchestrate/ledger.py resume_fate), e.g.
    'measured again on resume', '1 kept: INVALID in 2 runs, run.invalid_reruns=1 used up'."""
    fates = Counter(
        resume_fate(INVALID, ledger.invalid_runs(c.key), keep_invalid, invalid_reruns)
        for c in cells
        if ledger.status(c.key) == INVALID
    )
    if len(fates) <= 1:
        return next(iter(fates), resume_fate(INVALID))
    return "; ".join(f"{n} {fate}" for fate, n in sorted(fates.items()))


def last_error(state: Any) -> str:
    """The first line of a cell's last error, at most 120 characters ("" when none); an INVALID
    cell's reasons whole, up to 400, for each names its fix (workers/signals/gates.py)."""
    if not state or not state.last_error:
        return ""
    return state.last_error.splitlines()[0][: 400 if state.status == INVALID else 120]


def status_record(name: str | None, where: Scope, ledger: Any, root: Any, checksums: bool) -> dict[str, Any]:
    """`status format=json`: the experiment (null: every cell of the store), the store, counts by
    status (of its cells; of each model's; of its anchor runs, apart; of the cells of other grids
    the store holds), every cell (label, key, status, attempts, last error), the store's problems
    and the leases other drivers hold."""
    cells = where.cells
    keys = {c.key for c in cells}
    now = time.time()
    return {
        "experiment": name,
        "store": redact(str(root)),
        "checksums": checksums,
        "counts": {"cells": len(cells), **ledger.counts([c.key for c in cells])},
        "counts_by_model": {model: ledger.counts(mine) for model, mine in keys_by_model(cells).items()},
        "anchor_runs": {"runs": len(where.anchors), **ledger.counts(where.anchors)},
        # Cells of another grid or experiment in the same store (empty without a grid: all are counted).
        "elsewhere": {"cells": len(where.others), **ledger.counts(where.others, pending=False)},
        "problems": list(ledger.problems),
        "leases": [
            {
                "cell_key": lease.cell_key,
                "holder": lease.holder(),
                "expired": lease.expired(now),
                "stale": lease.stale(now),  # why no driver holds it (expired, pid gone), or null
                "expires_in_s": round(lease.expires_at - now, 1),
            }
            for lease in all_leases(root)
            if name is None or lease.cell_key in keys
        ],
        # Lease files that name no driver (garbled): run.lease_s after it was written, a run takes each
        # over, or removes it where its cell is measured.
        "unreadable_leases": [
            {"cell_key": bad.cell_key, "why": bad.why, "written_s_ago": round(bad.age_s, 1)}
            for bad in unreadable_leases(root)
            if name is None or bad.cell_key in keys
        ],
        "cells": [
            {
                "label": cell.label,
                "key": cell.key,
                "status": ledger.status(cell.key),
                "attempts": state.attempts if (state := ledger.states.get(cell.key)) else 0,
                "last_error": last_error(state) or None,
            }
            for cell in cells
        ],
    }

"""`python -m grid report experiment=...`: one self-contained HTML page per experiment.

The experiment's cells are the ones its config expands to now (pass the same
overrides as the run, since every result-affecting setting is in a cell's key),
plus the drift anchors of the sessions that measured them. The page goes to
<store>/reports/<experiment name>.html; open it in any browser, offline. With no
override that names a grid (`paths.store` alone), every cell the store holds goes
to <store>/reports/store.html.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from analysis.decision import CONFIDENCE
from grid.config.compose import check_run_mode, compose_config, names_a_grid
from grid.config.expand import to_config
from grid.orchestrate.ledger import DONE, INVALID, Ledger, build_ledger, counts_words
from store.atomic import write_atomic
from store.layout import StoreLayout
from vocab.errors import GridError
from vocab.paths import existing_store

# The page of `report paths.store=...` without a grid: every cell the store holds.
STORE_PAGE = "store"


def _write_report(overrides: list[str]) -> tuple[Path, list[str]]:
    """The page's path, and its notes naming each cell left out (damaged file, failed, INVALID)."""
    cfg = compose_config(overrides)
    check_run_mode(cfg)
    config = to_config(cfg)
    try:
        from analysis.html_report import render_report  # matplotlib: a report dependency only
        from analysis.study import load_study
    except ImportError as exc:
        raise GridError(f"the report needs matplotlib ({exc}); pip install -e '.[report]'") from exc
    root = existing_store(config.paths.store, config.paths.store_options)
    from grid.orchestrate.confirm import read_record
    from grid.orchestrate.sequential import selection_scope

    if names_a_grid(overrides):
        name = config.name
        record = read_record(root, config.name)
        keys, confidence = selection_scope(overrides)
    else:  # `paths.store` alone: every cell the store holds, on a page of its own
        name, record, keys, confidence = STORE_PAGE, None, None, CONFIDENCE
    study = load_study(root, cell_keys=keys, confirmation_record=record, confidence=confidence)
    # The cells' states as run and status count them (grid/orchestrate/ledger.py), first among the
    # page's notes.
    study = replace(study, notes=[state_line(build_ledger(root), keys), *study.notes])
    path = StoreLayout(root).report_file(name)
    if study.measured.empty and path.exists():
        # Most often the run's overrides were left off (every result-affecting setting is in a
        # cell's key): an empty page would replace the real one.
        raise GridError(
            f"no cell of experiment '{name}' as these overrides expand it is in the store, so "
            f"{path} (an earlier report) is kept; pass the overrides the run had "
            f"(`python -m grid report experiment={name} <the run's overrides>`)"
        )
    page = render_report(study, f"lever-grid: {name if keys is not None else f'every cell of {root}'}")
    write_atomic(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    return path, [n for n in study.notes if n.startswith(("left out", "not used"))]


def state_line(ledger: Ledger, keys: Collection[str] | None) -> str:
    """'31 cells: done 30 (VALID), invalid 1 (...), ...; 4 anchor runs: done 4' in the states of
    grid/orchestrate/ledger.py (counts_words, as run and status say them), over the experiment's
    cells (`keys`) or every cell the store holds (None: no pending count); anchor runs apart."""
    grid = keys is not None
    anchors = set(ledger.anchor_keys())
    keys = list(keys) if keys is not None else list(ledger.states)
    cells = [k for k in keys if k not in anchors]
    notes = {DONE: "VALID", INVALID: "measured, a validity gate failed: left out of every figure"}
    return (
        counts_words(ledger.counts(cells, pending=grid), ledger.counts(anchors.intersection(keys)), notes)
        + " (grid/orchestrate/ledger.py's states, as run and status count them)."
    )


def report(overrides: list[str]) -> int:
    path, left_out = _write_report(overrides)
    for line in left_out:  # also in the page's notes
        print(line)
    print(f"report: {path}")
    return 0

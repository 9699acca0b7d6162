"""The drift anchor: one cell every session runs first, last and (grid.anchor.runs > 2) in between. Pure.

Results drift between sessions (other tenants, clocks, thermals, driver
state) and within one. Re-measuring one fixed cell across a session gives its
drift: with two runs (start, end) only their difference, which launch noise
alone makes sqrt(2) x the per-launch sd; with three or more, the trend of the
runs over the session and its interval (analysis/drift.py). The anchor runs on
engine launches of its own, before, between and after the grid's launches, so
it measures the machine and not the order of the grid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from grid.config.catalog import Catalog, catalog_of, load_spec
from grid.config.expand import corpus_load, lever_ks
from grid.plan.groups import group_by_engine
from vocab.cells import Cell, EngineSpec
from vocab.errors import ConfigError
from vocab.groups import EngineGroup
from vocab.schema import Config, CorpusSpec, LeverSpec, ModelSpec

ANCHOR_POSITIONS = ("start", "end")


def anchor_positions(runs: int) -> list[str]:
    """'start', 'mid1' .. 'mid<runs-2>', 'end': the positions of a session's anchor runs, in order.

    The middle names are new cell keys; 'start' and 'end' stay as they were, so stores resume."""
    return ["start", *[f"mid{i}" for i in range(1, runs - 1)], "end"]


def anchored_phases(launches: list[EngineGroup], anchors: Sequence[Cell] | None) -> list[list[EngineGroup]]:
    """The run's phases: the first anchor, the launches cut into len(anchors) - 1 even runs of
    launches with the middle anchors between them, the last anchor. Without anchors: one phase."""
    if not anchors:
        return [launches]
    chunks = len(anchors) - 1
    bounds = [round(i * len(launches) / chunks) for i in range(chunks + 1)]
    phases = [group_by_engine([anchors[0]])]
    for i in range(chunks):
        phases.append(launches[bounds[i] : bounds[i + 1]])
        phases.append(group_by_engine([anchors[i + 1]]))
    return [p for p in phases if p]


def anchor_cells(config: Config, conf_dir: Path | Catalog | None = None) -> tuple[Cell, ...] | None:
    """The session's anchor cells in order (start, mid1.., end), or None when grid.anchor.enabled is false.

    Default: `van` on the grid's first model and first corpus, repeat 0, at the
    experiment's load. A lever with drafts runs at its first K.
    """
    spec = config.grid.anchor
    if not spec.enabled:
        return None
    catalog = conf_dir if conf_dir is not None else catalog_of(config)  # the run's own specs and folders
    model_name = spec.model or config.grid.models[0]
    corpus_name = spec.corpus or config.grid.corpora[0]
    model = load_spec(ModelSpec, model_name, catalog)
    lever = load_spec(LeverSpec, spec.lever, catalog)
    corpus = load_spec(CorpusSpec, corpus_name, catalog)
    if lever.quantized:
        raise ConfigError(f"grid.anchor.lever '{lever.name}' changes the model; anchor on a lossless lever")
    k = lever_ks(lever, None)[0]
    load = corpus_load(config, corpus.name)
    start = Cell(EngineSpec(model, lever, k, config.engine), corpus, load, anchor="start")
    return tuple(dataclasses.replace(start, anchor=p) for p in anchor_positions(spec.runs))

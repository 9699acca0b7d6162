"""The drift anchor: one cell every session runs first and again last. Pure.

Results drift between sessions (other tenants, clocks, thermals, driver
state) and within one. Re-measuring one fixed cell at both ends of a session
gives its drift band: a lever's gain smaller than that band is not evidence.
The anchor runs on its own engine launches, before and after everything
else, so it measures the machine and not the order of the grid.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from grid.catalog import Catalog, catalog_of, load_spec
from grid.expand import corpus_load, lever_ks
from vocab.cells import Cell, EngineSpec
from vocab.errors import ConfigError
from vocab.schema import Config, CorpusSpec, LeverSpec, ModelSpec

ANCHOR_POSITIONS = ("start", "end")


def anchor_cells(config: Config, conf_dir: Path | Catalog | None = None) -> tuple[Cell, Cell] | None:
    """The session's (start, end) anchor cells, or None when grid.anchor.enabled is false.

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
    return start, dataclasses.replace(start, anchor="end")

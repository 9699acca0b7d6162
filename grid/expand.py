"""Expand a composed config into cells. Pure: no Ray, no processes, no I/O but conf/."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from grid.catalog import load_spec
from grid.cells import Cell, EngineSpec
from grid.compose import CONF_DIR
from grid.errors import ConfigError
from grid.schema import Config, CorpusSpec, LeverSpec, ModelSpec


def to_config(cfg: DictConfig) -> Config:
    """The composed DictConfig as the typed Config dataclass."""
    obj = OmegaConf.to_object(cfg)
    assert isinstance(obj, Config)
    return obj


def lever_ks(lever: LeverSpec, restrict: list[int] | None) -> list[int]:
    """K values a lever runs at: its own list, narrowed by the grid's `ks`; [0] without drafts."""
    if lever.spec_method is None:
        return [0]
    ks = [k for k in lever.ks if restrict is None or k in restrict]
    if not ks:
        raise ConfigError(
            f"lever '{lever.name}' has K values {lever.ks} but grid.ks={restrict} keeps none; "
            "change grid.ks or the lever's ks"
        )
    for k in ks:
        if k <= 0:
            raise ConfigError(f"lever '{lever.name}': K must be positive, got {k}")
    return ks


def validate(config: Config) -> None:
    """Reject settings that cannot run, before anything is launched."""
    grid = config.grid
    for what, names in (("models", grid.models), ("corpora", grid.corpora), ("levers", grid.levers)):
        if not names:
            raise ConfigError(f"grid.{what} is empty; name at least one (e.g. grid.{what}=[...])")
        if len(set(names)) != len(names):
            raise ConfigError(f"grid.{what} lists a name twice: {names}")
    if grid.repeats < 1:
        raise ConfigError(f"grid.repeats must be >= 1, got {grid.repeats}")
    if config.load.concurrency < 1:
        raise ConfigError(f"load.concurrency must be >= 1, got {config.load.concurrency}")
    if config.load.max_tokens < 1:
        raise ConfigError(f"load.max_tokens must be >= 1, got {config.load.max_tokens}")
    if config.load.num_prompts < 1:
        raise ConfigError(f"load.num_prompts must be >= 1, got {config.load.num_prompts}")


def expand(config: Config, conf_dir: Path = CONF_DIR) -> list[Cell]:
    """All cells of the grid, grouped so cells sharing an engine spec are adjacent.

    Order: model, lever, K (one engine each), then repeat and corpus.
    """
    validate(config)
    grid = config.grid
    models = [load_spec(ModelSpec, name, conf_dir) for name in grid.models]
    levers = [load_spec(LeverSpec, name, conf_dir) for name in grid.levers]
    corpora = [load_spec(CorpusSpec, name, conf_dir) for name in grid.corpora]
    cells = []
    for model in models:
        for lever in levers:
            for k in lever_ks(lever, grid.ks):
                spec = EngineSpec(model=model, lever=lever, k=k, engine=config.engine)
                for repeat in range(grid.repeats):
                    for corpus in corpora:
                        cells.append(Cell(spec, corpus, config.load, repeat))
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        raise ConfigError("two cells have the same key; the grid lists the same combination twice")
    return cells

"""Expand a composed config into cells. Pure: no Ray, no processes, no I/O but the config folders."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from omegaconf import DictConfig, OmegaConf

from grid.config.catalog import Catalog, catalog_of
from vocab.cells import REFERENCE_LEVER, Cell, EngineSpec, draft_hook, drafts_from_history
from vocab.errors import ConfigError
from vocab.schema import ClusterSpec, Config, CorpusSpec, GridSpec, LeverSpec, LoadSpec, ModelSpec


@dataclass(frozen=True)
class Skipped:
    """A combination the grid names but that cannot run, and why."""

    model: str
    lever: str
    reason: str


@dataclass(frozen=True)
class Expansion:
    cells: list[Cell]
    skipped: list[Skipped] = field(default_factory=list)


def to_config(cfg: DictConfig) -> Config:
    """The composed DictConfig as the typed Config dataclass."""
    obj = OmegaConf.to_object(cfg)
    assert isinstance(obj, Config)
    return obj


ENGINE_REUSE = ("auto", "per_spec", "per_corpus", "shared")


def fresh_per_corpus(cell: Cell, grid: GridSpec) -> bool:
    """Whether this cell's corpus gets an engine of its own (grid.engine_reuse, grid.own_engine_corpora)."""
    if grid.engine_reuse == "shared":
        return False  # every cell starts on a reset engine
    if cell.corpus.name in grid.own_engine_corpora:
        return True
    if grid.engine_reuse == "auto":
        return drafts_from_history(cell.engine_spec.lever)
    return grid.engine_reuse == "per_corpus"


def corpus_load(config: Config, corpus: str) -> LoadSpec:
    """The load a cell of `corpus` runs: load.num_prompts, or grid.num_prompts[corpus] where set."""
    sized = config.grid.num_prompts.get(corpus)
    return config.load if sized is None else replace(config.load, num_prompts=sized)


def lever_ks(lever: LeverSpec, override: list[int] | None) -> list[int]:
    """K values a lever runs at: grid.ks[lever] or the lever's own list; [0] without drafts."""
    if lever.spec_method is None:
        if override:
            raise ConfigError(f"grid.ks names lever '{lever.name}', which has no drafts; remove it")
        return [0]
    ks = list(override) if override else list(lever.ks)
    if not ks:
        raise ConfigError(f"lever '{lever.name}' has no K values; set ks in its file or grid.ks")
    for k in ks:
        if k <= 0:
            raise ConfigError(f"lever '{lever.name}': K must be positive, got {k}")
    if len(set(ks)) != len(ks):
        raise ConfigError(f"lever '{lever.name}': K values repeat: {ks}")
    return ks


def max_node_gpus(cluster: ClusterSpec) -> int | None:
    """GPUs of the largest node described, or None when the cluster is not described."""
    return max((n.gpus for n in cluster.nodes), default=None)


def validate(config: Config) -> None:
    """Reject settings that cannot run, before anything is launched."""
    grid = config.grid
    for what, names in (("models", grid.models), ("corpora", grid.corpora), ("levers", grid.levers)):
        if not names:
            raise ConfigError(f"grid.{what} is empty; name at least one (e.g. grid.{what}=[...])")
        if len(set(names)) != len(names):
            raise ConfigError(f"grid.{what} lists a name twice: {names}")
    unknown_ks = set(grid.ks) - set(grid.levers)
    if unknown_ks:
        raise ConfigError(f"grid.ks names levers not in grid.levers: {sorted(unknown_ks)}")
    if grid.repeat_order not in ("interleaved", "same_engine"):
        raise ConfigError(f"grid.repeat_order must be interleaved or same_engine, got '{grid.repeat_order}'")
    if grid.engine_reuse not in ENGINE_REUSE:
        raise ConfigError(
            f"grid.engine_reuse must be one of {', '.join(ENGINE_REUSE)}, got '{grid.engine_reuse}'"
        )
    if grid.repeats < 1:
        raise ConfigError(f"grid.repeats must be >= 1, got {grid.repeats}")
    if grid.engine_reuse == "shared":
        if grid.repeat_order != "interleaved":
            raise ConfigError(
                "grid.engine_reuse=shared places repeats on launches itself (grid.launches_per_argv); "
                "use grid.repeat_order=interleaved"
            )
        if grid.launches_per_argv == 1:
            raise ConfigError(
                "grid.launches_per_argv=1 measures no launch-to-launch noise; use 0 (a launch per repeat) "
                "or at least 2"
            )
    for name in ("concurrency", "max_tokens", "num_prompts"):
        if getattr(config.load, name) < 1:
            raise ConfigError(f"load.{name} must be >= 1, got {getattr(config.load, name)}")
    for corpus, count in grid.num_prompts.items():
        if count < 1:
            raise ConfigError(f"grid.num_prompts.{corpus} must be >= 1, got {count}")
    if grid.repeat_order == "same_engine" and grid.repeats > 1 and not config.load.allow_repeats:
        raise ConfigError(
            "grid.repeat_order=same_engine sends every repeat's prompts to an engine that already served "
            "them (prefix cache, suffix tree); use grid.repeat_order=interleaved (a launch per repeat), "
            "or set load.allow_repeats=true to measure anyway (cells record the reuse)"
        )


def check_num_prompts_names(grid: GridSpec, catalog: Catalog) -> None:
    """grid.num_prompts may size corpora this grid leaves out (an experiment's defaults under
    `grid.corpora=[...]`: they apply when the corpus is in the grid); a name no corpus has is a typo."""
    unknown = sorted(set(grid.num_prompts) - set(catalog.names("corpus")) - set(grid.corpora))
    if unknown:
        names = ", ".join(f"'{name}'" for name in unknown)
        known = catalog.known("corpus")
        raise ConfigError(f"grid.num_prompts names corpus {names}, which does not exist; {known}")


def check_model_fits(model: ModelSpec, cluster: ClusterSpec) -> None:
    largest = max_node_gpus(cluster)
    if model.tp < 1:
        raise ConfigError(f"model '{model.name}': tp must be >= 1, got {model.tp}")
    if largest is not None and model.tp > largest:
        raise ConfigError(
            f"model '{model.name}' needs {model.tp} GPUs on one node but the largest node of "
            f"cluster '{cluster.name}' has {largest}; pick another cluster or lower its tp"
        )


def skip_reason(model: ModelSpec, lever: LeverSpec) -> str | None:
    if lever.quantized and not model.quantized_variant:
        return "the model has no quantized_variant (set one in its conf/model file)"
    return None


def judged_by_exact_match(lever: LeverSpec) -> bool:
    """Levers the gate holds to van's outputs: all but van and those that change outputs on purpose."""
    return lever.name != REFERENCE_LEVER and not lever.quantized


def van_replicates(cells: list[Cell], config: Config, corpora: list[CorpusSpec]) -> list[Cell]:
    """Per model x corpus, a second greedy van run of repeat 0's prompts, each on a fresh engine.

    The equivalence gate's paired test needs van's own run-to-run agreement on
    the same prompts (bf16 on GPUs is not reproducible under concurrency);
    added only where some lever of the model is judged by exact match and
    gates.equivalence.van_replicate is on (or, with van_replicate_always, for
    every model: a van-only grid whose levers come in later grids). Launches numbered below 0, one per
    corpus, so a replicate never shares an engine with the van cells it repeats.
    """
    if not config.gates.equivalence.van_replicate or config.load.temperature != 0:
        return []
    judged = {c.engine_spec.model.name for c in cells if judged_by_exact_match(c.engine_spec.lever)}
    if config.gates.equivalence.van_replicate_always:
        judged |= {c.engine_spec.model.name for c in cells}
    return [
        replace(c, replicate=True, launch=-1 - corpora.index(c.corpus))
        for c in cells
        if c.engine_spec.lever.name == REFERENCE_LEVER
        and c.repeat == 0
        and c.engine_spec.model.name in judged
    ]


def expand_all(config: Config, catalog: Catalog | None = None) -> Expansion:
    """All cells of the grid plus the skipped combinations.

    Order: repeat, then engine spec (model, lever, K; reversed on odd repeats),
    then corpus, when repeats are interleaved; engine spec, repeat, corpus
    when they share one launch. Cells of one launch are adjacent. Specs come
    from `catalog`, by default the config's own (its user folders, conf/, the
    specs it gives: grid/config/catalog.py).
    """
    validate(config)
    grid = config.grid
    catalog = catalog or catalog_of(config)
    check_num_prompts_names(grid, catalog)
    models = [catalog.load(ModelSpec, name) for name in grid.models]
    levers = [catalog.load(LeverSpec, name) for name in grid.levers]
    corpora = [catalog.load(CorpusSpec, name) for name in grid.corpora]
    loads = {corpus.name: corpus_load(config, corpus.name) for corpus in corpora}
    specs, skipped = [], []
    for model in models:
        check_model_fits(model, config.cluster)
        for lever in levers:
            if reason := skip_reason(model, lever):
                skipped.append(Skipped(model.name, lever.name, reason))
                continue
            specs.extend(
                EngineSpec(model, lever, k, config.engine) for k in lever_ks(lever, grid.ks.get(lever.name))
            )
    cells = []
    if grid.repeat_order == "same_engine":
        for spec in specs:
            for repeat in range(grid.repeats):
                cells.extend(Cell(spec, corpus, loads[corpus.name], repeat) for corpus in corpora)
    else:
        for repeat in range(grid.repeats):
            for spec in specs if repeat % 2 == 0 else reversed(specs):
                cells.extend(
                    Cell(spec, corpus, loads[corpus.name], repeat, launch=repeat) for corpus in corpora
                )
    # A launch per (launch, corpus) where engines are not reused: same cells and keys, more starts.
    # Numbered from grid.repeats up, past every shared launch (0 .. repeats-1), so a
    # corpus with its own engine never lands on a launch that other corpora share.
    cells = [
        replace(c, launch=grid.repeats + c.launch * len(corpora) + corpora.index(c.corpus))
        if fresh_per_corpus(c, grid)
        else c
        for c in cells
    ]
    cells += van_replicates(cells, config, corpora)
    if grid.engine_reuse == "shared":
        cells = shared_blocks(cells, shared_launches(grid))
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        raise ConfigError("two cells have the same key; the grid lists the same combination twice")
    return Expansion(cells, skipped)


def check_one_lever_per_hook(group: list[Cell]) -> None:
    """Two levers with one draft hook (two dynk K sets) would need two settings in one engine."""
    by_hook: dict[str, set[str]] = {}
    for cell in group:
        if (hook := draft_hook(cell.engine_spec.lever)) is not None:
            by_hook.setdefault(hook, set()).add(cell.engine_spec.lever.name)
    for hook, names in by_hook.items():
        if len(names) > 1:
            raise ConfigError(
                f"levers {', '.join(sorted(names))} both run draft hook '{hook}' at the same engine "
                "arguments; one shared launch holds one setting per hook: use grid.engine_reuse=per_spec, "
                "or drop one"
            )


def shared_launches(grid: GridSpec) -> int:
    """Launches per argv under engine_reuse=shared: grid.launches_per_argv, at most one per repeat."""
    return min(grid.repeats, grid.launches_per_argv or grid.repeats)


def shared_blocks(cells: list[Cell], launches: int) -> list[Cell]:
    """engine_reuse=shared: cells of one argv in blocks on `launches` launches per argv.

    Repeat r runs on launch r mod `launches` (a van replicate on launch -1, apart
    from the van cells it repeats). In a launch, a block is one corpus and prompt
    draw (repeat), each lever of the launch once; the levers' order alternates
    between blocks (A B, B A, ...), so drift within the launch falls on each lever
    alike. Launches stay in the order their first cell had; blocks in repeat, then
    corpus order.
    """
    launched = [replace(c, shared=True, launch=-1 if c.replicate else c.repeat % launches) for c in cells]
    by_launch: dict[tuple[str, int], list[Cell]] = {}
    for cell in launched:
        by_launch.setdefault((cell.launch_key, cell.launch), []).append(cell)
    out: list[Cell] = []
    for group in by_launch.values():
        levers = list(dict.fromkeys(c.engine_spec.lever.name for c in group))
        check_one_lever_per_hook(group)
        blocks: dict[tuple[int, str], list[Cell]] = {}
        for cell in sorted(group, key=lambda c: c.repeat):
            blocks.setdefault((cell.repeat, cell.corpus.name), []).append(cell)
        for index, block in enumerate(blocks.values()):
            order = levers if index % 2 == 0 else levers[::-1]
            block.sort(key=lambda c: order.index(c.engine_spec.lever.name))
            out.extend(replace(c, block=index) for c in block)
    return out


def expand(config: Config, catalog: Catalog | None = None) -> list[Cell]:
    """The runnable cells of the grid (see expand_all for the skipped ones)."""
    return expand_all(config, catalog).cells

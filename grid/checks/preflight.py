"""Checks done before anything is launched: each problem one line that names it and the fix.

Two stages, so that every problem shows at once wherever that is cheap:

- check_config (no files but conf/): run.mode, run.max_attempts, the cluster's
  nodes, every model's tensor-parallel size against the engine and the
  cluster, load.max_tokens against engine.max_model_len. `run`, `plan` and
  `simulate` call it before expanding the grid.
- inspect / check_before_launch (the filesystem): every model's weights,
  engine command and plugin, the store (a temp file or folder created and removed
  there, nothing left behind), every corpus read once (grid/checks/prompt_audit.py), every prompt a cell
  sends against its engine's context (grid/checks/prompt_fit.py), and measured
  prompts that would not be new to their engine. `run` stops on any of them
  before Ray or an engine starts; `plan` shows them as warnings.
- the corpora's hashes: each corpus's sha256 as read here is what the run
  plans (workers check it, cells record it); a resume whose done cells
  recorded another hash for a corpus stops (grid/checks/corpus_resume.py).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from grid.checks.corpus_resume import resume_problems
from grid.checks.prompt_audit import (
    CellPrompts,
    CorpusKey,
    CorpusRead,
    SentKey,
    audit_groups,
    corpus_key,
    read_corpora,
    repeat_problems,
)
from grid.checks.prompt_fit import Fit, FitJob, fits, hub_snapshot, is_hub_id, local_tokenizer
from grid.config.catalog import load_spec
from grid.config.compose import run_mode_problem
from store.fs import StorePath, StoreRoot
from vocab.cells import Cell
from vocab.errors import ConfigError
from vocab.groups import EngineGroup
from vocab.paths import data_path, project_path, store_path
from vocab.schema import Config, ModelSpec


def raise_problems(problems: list[str], stopped: str = "the run before any engine starts") -> None:
    """One ConfigError: the problem itself, or a count and one line each."""
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problems stop {stopped}:\n  " + "\n  ".join(problems))


# --- stage 1: the configuration alone -----------------------------------------------------------


def config_problems(config: Config, conf_dir: Path | None = None) -> list[str]:
    """Settings that cannot run, from the configuration alone (no corpora, weights or store read).

    Model files come from `conf_dir`, or by default wherever grid/config/catalog.py finds them.
    """
    problems = []
    if (mode_problem := run_mode_problem(config.run.mode)) is not None:
        problems.append(mode_problem)
    if config.run.max_attempts < 1:
        problems.append(f"run.max_attempts must be >= 1, got {config.run.max_attempts}")
    engine, load = config.engine, config.load
    if load.max_tokens >= engine.max_model_len:
        problems.append(
            f"load.max_tokens {load.max_tokens:,} leaves no room for a prompt in engine.max_model_len "
            f"{engine.max_model_len:,} (vLLM rejects a request whose prompt tokens + max_tokens exceed it, "
            f"so every request would fail); raise engine.max_model_len above {load.max_tokens:,} or lower "
            f"load.max_tokens below {engine.max_model_len:,}"
        )
    cluster_problems, largest = node_problems(config)
    problems += cluster_problems
    failing = []
    for name in model_names(config):
        try:
            model = load_spec(ModelSpec, name) if conf_dir is None else load_spec(ModelSpec, name, conf_dir)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        if (reason := tp_problem(model, config, largest)) is not None:
            failing.append((model, reason))
    problems += [f"model '{model.name}' {reason}" for model, reason in failing]
    return problems


def model_names(config: Config) -> list[str]:
    """The grid's models and the drift anchor's, each once."""
    names = list(dict.fromkeys(config.grid.models))
    anchor = config.grid.anchor
    if anchor.enabled and anchor.model and anchor.model not in names:
        names.append(anchor.model)
    return names


def node_problems(config: Config) -> tuple[list[str], int | None]:
    """Problems with the cluster's node list, and the GPUs of its largest node (None: not described).

    An entry with `count: 0` describes no node and is left out of the fit check;
    a list of such entries only describes no cluster at all, which is an error.
    """
    cluster = config.cluster
    problems = [
        f"cluster '{cluster.name}': node entry {i + 1} has count {node.count} and gpus {node.gpus}; "
        "both must be >= 0"
        for i, node in enumerate(cluster.nodes)
        if node.count < 0 or node.gpus < 0
    ]
    counted = [node for node in cluster.nodes if node.count > 0]
    if cluster.nodes and not counted:
        problems.append(
            f"cluster '{cluster.name}' lists node entries but every one has count 0, so it describes no "
            "node; give an entry count >= 1, or use cluster=local for whatever Ray finds"
        )
    return problems, max((node.gpus for node in counted), default=None)


def tp_problem(model: ModelSpec, config: Config, largest: int | None) -> str | None:
    """Why `model`'s tensor-parallel size cannot run on this engine and cluster, or None."""
    if model.tp < 1:
        return f"has tp {model.tp}; tp must be >= 1 (its conf/model file)"
    if not config.ray.use_gpus:
        if model.tp > 1:
            return (
                f"needs {model.tp} GPUs (tp {model.tp}) but engines here get none (ray.use_gpus=false, "
                "e.g. the CPU engine), where only tp 1 runs; pick a model with tp 1 (e.g. "
                "grid.models=[tiny]) or run on GPUs (engine=gpu ray.use_gpus=true)"
            )
        return None
    if largest is not None and model.tp > largest:
        return (
            f"needs {model.tp} GPUs on one node but the largest node of cluster '{config.cluster.name}' "
            f"has {largest}; pick another cluster or lower its tp"
        )
    return None


def check_config(config: Config, conf_dir: Path | None = None, command: str = "run") -> None:
    """Stop on every problem config_problems finds, all at once."""
    stopped = "the run before any engine starts" if command == "run" else f"`{command}`"
    raise_problems(config_problems(config, conf_dir), stopped)


# --- stage 2: the filesystem --------------------------------------------------------------------


def input_problems(
    cells: list[Cell], models_dir: Path, cache_dir: Path | None = None, use_gpus: bool = True
) -> list[str]:
    """Every model's weights, every engine command and plugin the cells need; one line each.

    Engines run offline (HF_HUB_OFFLINE=1, their Hugging Face cache under
    <cache_dir>/hf). Without GPUs (ray.use_gpus=false, the CPU engine) they run
    on this machine, so a hub id must already be in that cache; a GPU cluster's
    nodes hold their own copies, which this machine cannot see.
    """
    problems: dict[str, str] = {}
    weights: set[str] = set()
    for cell in cells:
        model, path = cell.engine_spec.model, model_weights(cell)
        if path not in weights:
            weights.add(path)
            reason = weights_problem(model, path, models_dir, cache_dir, use_gpus)
            if (reason := reason or model_folder_problem(cell, path, models_dir, use_gpus)) is not None:
                problems[f"weights:{path}"] = reason
        command = cell.engine_spec.engine.command
        if not command:
            problems["command"] = "engine.command is empty; e.g. engine.command=[vllm,serve]"
        elif command[0] != "{python}" and shutil.which(command[0]) is None:
            problems["command"] = f"engine command '{command[0]}' not found on PATH; set engine.command"
        if (plugin := plugin_problem(cell)) is not None:
            problems.setdefault(f"plugin:{cell.engine_spec.lever.name}", plugin)
    return list(problems.values())


def model_weights(cell: Cell) -> str:
    """The weights the engine loads: the quantised variant for levers that ask for it."""
    spec = cell.engine_spec
    return (spec.model.quantized_variant if spec.lever.quantized else None) or spec.model.path


def weights_problem(
    model: ModelSpec, path: str, models_dir: Path, cache_dir: Path | None, use_gpus: bool
) -> str | None:
    if "{models_dir}" in path:
        folder = Path(path.replace("{models_dir}", str(models_dir)))
        if not (folder / "config.json").is_file():
            return f"model '{model.name}' has no weights at {folder}; run `make assets`"
        return None
    if Path(path).is_absolute():
        if not (Path(path) / "config.json").is_file() and not use_gpus:
            return f"model '{model.name}' has no weights at {path} (no config.json); fix its path"
        return None
    if use_gpus or cache_dir is None or not is_hub_id(path):
        return None
    if hub_snapshot(path, cache_dir, "config.json") is not None:
        return None
    return (
        f"model '{model.name}' names hub id '{path}', but engines run offline (HF_HUB_OFFLINE=1) and it is "
        f"not in their cache ({cache_dir / 'hf' / 'hub'}); put its weights in a folder and give it as "
        f"+model.{model.name}.path=/that/folder (or in a model file of your own conf folder), or pick a "
        "model with local weights (e.g. grid.models=[tiny])"
    )


# Files that hold a model's weights (Hugging Face safetensors or PyTorch bins, GGUF, PyTorch checkpoints).
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.gguf", "*.pt", "*.pth")
# Where a config.json gives the context, the names vLLM reads (transformers' config classes differ).
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length")
# vLLM lets max_model_len exceed the model's context only with this set (in the engine's environment).
ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def local_model_folder(path: str, models_dir: Path, use_gpus: bool) -> Path | None:
    """The folder on this machine that preflight reads for weights `path`, or None: a `{models_dir}`
    path always; an absolute one where the engines run here (ray.use_gpus=false: a GPU cluster's
    nodes hold their own copies); a hub id never."""
    if "{models_dir}" in path:
        return Path(path.replace("{models_dir}", str(models_dir)))
    if Path(path).expanduser().is_absolute() and not use_gpus:
        return Path(path).expanduser()
    return None


def model_folder_problem(cell: Cell, path: str, models_dir: Path, use_gpus: bool) -> str | None:
    """Why the model folder at `path` cannot serve `cell`'s engine, or None: a relative path (the
    engine's working folder is not this one), no weights file (unless loaded as dummy weights), or
    engine.max_model_len above the context its config.json gives. weights_problem has found its
    config.json already where the folder is local."""
    model = cell.engine_spec.model
    if relative_model_path(path):
        return (
            f"model '{model.name}' path '{path}' is relative, and the engine runs in another folder; "
            f"give an absolute path, {{models_dir}}/<folder> (paths.models_dir) or a hub id org/name"
        )
    folder = local_model_folder(path, models_dir, use_gpus)
    if folder is None or not (folder / "config.json").is_file():
        return None
    if (unreadable := config_json_problem(folder / "config.json")) is not None:
        return f"model '{model.name}': {unreadable}, so the engine would not start; fix the file or its path"
    argv = [*model.extra_args, *cell.engine_spec.lever.extra_args, *cell.engine_spec.engine.extra_args]
    if not dummy_weights(argv) and not any(any(folder.glob(p)) for p in WEIGHT_PATTERNS):
        return (
            f"model '{model.name}' has no weights in {folder} (only its config.json; none of "
            f"{', '.join(WEIGHT_PATTERNS)}); put the weights there or fix its path (a model with random "
            "weights is given --load-format dummy in its extra_args)"
        )
    return context_problem(cell, folder / "config.json")


def config_json_problem(config_file: Path) -> str | None:
    """Why `config_file` is not a JSON object vLLM can read, or None (the adversarial pass, 2026-12-07:
    a config.json that was not JSON passed preflight and launched an engine that failed)."""
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"its config.json at {config_file} cannot be read as JSON ({' '.join(str(exc).split())})"
    if not isinstance(config, dict):
        return f"its config.json at {config_file} holds a {type(config).__name__}, not a JSON object"
    return None


def relative_model_path(path: str) -> bool:
    """A path relative to some working folder: neither `{models_dir}`, absolute, `~`, nor a hub id."""
    if "{models_dir}" in path or path.startswith("~") or Path(path).is_absolute():
        return False
    return not is_hub_id(path) or path.startswith(".")


def dummy_weights(argv: list[str]) -> bool:
    """Whether the engine loads random weights (`--load-format dummy` or `--load-format=dummy`)."""
    return "--load-format=dummy" in argv or ("--load-format", "dummy") in itertools.pairwise(argv)


def context_problem(cell: Cell, config_file: Path) -> str | None:
    """engine.max_model_len above the model's context (config.json), or None where it fits or the
    file gives none."""
    engine = cell.engine_spec.engine
    if ALLOW_LONG_ENV in {**engine.env, **cell.engine_spec.lever.env}:
        return None
    found = model_context(config_file)
    if found is None or engine.max_model_len <= found[0]:
        return None
    context, key = found
    return (
        f"model '{cell.engine_spec.model.name}': engine.max_model_len {engine.max_model_len:,} exceeds its "
        f"context of {context:,} tokens ({key} in {config_file}), so the engine would not start; "
        f"set engine.max_model_len={context} or lower"
    )


def model_context(config_file: Path) -> tuple[int, str] | None:
    """(tokens, the key that gave them) of a config.json: the smallest of CONTEXT_KEYS at its top or
    in its text_config (a multimodal model's language part), times a rope_scaling factor; None
    where the file gives none or cannot be read (the engine says why)."""
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    text = config.get("text_config")
    layers = [("", config), ("text_config.", text if isinstance(text, dict) else {})]
    found = [
        (value, f"{prefix}{key}")
        for prefix, layer in layers
        for key in CONTEXT_KEYS
        if isinstance(value := layer.get(key), int) and not isinstance(value, bool) and value > 0
    ]
    if not found:
        return None
    tokens, key = min(found)
    scaling = config.get("rope_scaling") or (text.get("rope_scaling") if isinstance(text, dict) else None)
    if isinstance(scaling, dict) and isinstance(factor := scaling.get("factor"), int | float) and factor > 1:
        if not math.isfinite(factor):  # json reads Infinity; int() of it would raise: gives none
            return None
        # vLLM extends the context by the factor for most scaling types; the larger figure is the safe side.
        return int(tokens * factor), f"{key} x rope_scaling.factor {factor:g}"
    return tokens, key


PLUGIN_GROUP = "vllm.general_plugins"


def plugin_problem(cell: Cell) -> str | None:
    """A lever that needs a vLLM plugin must find it installed beside the engine.

    Checked only for engines run with the harness's own interpreter ({python});
    a cluster's own vLLM installation is its owner's to equip.
    """
    plugin = cell.engine_spec.lever.requires_plugin
    if plugin is None or cell.engine_spec.engine.command[:1] != ["{python}"]:
        return None
    installed = {ep.name for ep in entry_points(group=PLUGIN_GROUP)}
    if plugin not in installed:
        return (
            f"lever '{cell.engine_spec.lever.name}' needs the vLLM plugin '{plugin}' "
            f"(entry point group {PLUGIN_GROUP}), which is not installed; without it the "
            "lever would silently measure plain suffix decoding"
        )
    return None


def store_problem(root: StoreRoot, min_free_bytes: int = 0) -> str | None:
    """Why the store at `root` cannot be written, or None; nothing is left behind.

    Probed by writing real bytes to a temp file in it and removing it (store/space.py write_probe:
    an empty file can be made on a full disk), or, while it does not exist yet, by making a temp
    folder where it would be made (its nearest existing parent) and the probe file in that; then
    its free space against `min_free_bytes` (run.min_store_free_mb).
    """
    from store.space import space_problem, write_failure, write_probe

    if isinstance(root, StorePath):  # an object store: a probe object written and removed
        return object_store_problem(root)
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return (
            f"paths.store {root}: {existing} is a file, not a folder; "
            "point paths.store at a folder you can write (e.g. paths.store=results)"
        )
    try:
        if existing == root:
            write_probe(root)
        else:
            folder = tempfile.mkdtemp(prefix=".write-probe-", dir=existing)
            try:
                write_probe(Path(folder))
            finally:
                os.rmdir(folder)
    except OSError as exc:
        made = "" if existing == root else f"; it would be made in {existing}"
        return f"paths.store {write_failure(root, exc, 'cannot be written', made)}"
    short = space_problem(existing, min_free_bytes)
    return None if short is None else f"paths.store {short}"


@dataclass
class Inspection:
    """What stage 2 found: its problems (one line each) and the figures `plan` shows."""

    problems: list[str] = field(default_factory=list)
    audit: list[CellPrompts] = field(default_factory=list)
    corpora: dict[CorpusKey, CorpusRead] = field(default_factory=dict)
    fits: list[Fit] = field(default_factory=list)
    # Corpus name -> sha256 of the bytes read: what the run plans, records and checks on each node.
    corpus_sha256: dict[str, str] = field(default_factory=dict)
    # Lines the run prints and goes on (a run with nothing to measure whose corpora changed since).
    warnings: list[str] = field(default_factory=list)


def inspect(config: Config, groups: list[EngineGroup]) -> Inspection:
    """Every stage-2 problem of running `groups` (cells in launch order), collected, not raised."""
    paths = config.paths
    models_dir, cache_dir = project_path(paths.models_dir), project_path(paths.cache_dir)
    data_dir = data_path(paths.data_dir, paths.store_options)
    cells = [cell for group in groups for cell in group.cells]
    found = Inspection()
    if not cells:
        return found
    found.problems += input_problems(cells, models_dir, cache_dir, config.ray.use_gpus)
    root = store_path(paths.store, paths.store_options)
    if (store := store_problem(root, config.run.min_store_free_mb * 2**20)) is not None:
        found.problems.append(store)
    found.corpora = read_corpora(groups, data_dir, cache_dir)
    found.problems += [read.error for read in found.corpora.values() if read.error]
    found.corpus_sha256 = corpus_hashes(cells, found.corpora)
    sent: dict[SentKey, set[str]] = {}
    found.audit = audit_groups(
        groups, data_dir, config.gates.equivalence.probe_prompts, corpora=found.corpora, sent=sent
    )
    models = {cell.engine_spec.model.name: cell.engine_spec.model for cell in cells}
    jobs = [
        FitJob(
            read.spec.name,
            read.path,
            read.corpus,
            read.spec.endpoint,
            models[model],
            max_len,
            max_tokens,
            frozenset(hashes),
        )
        for (model, key, max_len, max_tokens), hashes in sent.items()
        if (read := found.corpora[key]).corpus is not None
    ]
    found.fits = fits(jobs, lambda model: local_tokenizer(model, models_dir, cache_dir))
    found.problems += [line for fit in found.fits if (line := fit.problem())]
    if not config.load.allow_repeats:
        found.problems += repeat_problems(found.audit)
    return found


def check_before_launch(
    config: Config, phases: list[list[EngineGroup]], kept: list[Cell] | None = None
) -> Inspection:
    """Stop on every stage-2 problem of the run's phases, all at once; return what was found.

    `kept`: the grid's cells that this run does not measure again; a corpus
    whose hash differs from what their stored results recorded stops the run
    (grid/checks/corpus_resume.py). The returned `corpus_sha256` is what the workers check.
    """
    found = inspect(config, [group for groups in phases for group in groups])
    if kept and found.corpus_sha256:
        root = store_path(config.paths.store, config.paths.store_options)
        found.problems += resume_problems(root, kept, found.corpus_sha256, found.corpora)
    elif kept and not any(group.cells for groups in phases for group in groups):
        found.warnings += changed_since(config, kept)
    raise_problems(found.problems)
    return found


def changed_since(config: Config, kept: list[Cell]) -> list[str]:
    """A run with nothing to measure: one line per corpus whose bytes changed since the grid's done
    cells measured it (grid/checks/corpus_resume.py), so that `nothing to run` does not read as all
    is well."""
    from grid.plan.groups import group_by_engine

    paths = config.paths
    reads = read_corpora(
        group_by_engine(kept), data_path(paths.data_dir, paths.store_options), project_path(paths.cache_dir)
    )
    root = store_path(paths.store, paths.store_options)
    lines = resume_problems(root, kept, corpus_hashes(kept, reads), reads)
    return [f"nothing to run, but the corpus changed since it was measured: {line}" for line in lines]


def corpus_hashes(cells: list[Cell], reads: dict[CorpusKey, CorpusRead]) -> dict[str, str]:
    """Corpus name -> sha256 of the bytes read, for the cells' corpora that were read."""
    hashes = {}
    for cell in cells:
        read = reads.get(corpus_key(cell.corpus))
        if read is not None and read.corpus is not None and read.corpus.sha256:
            hashes[cell.corpus.name] = read.corpus.sha256
    return hashes


def object_store_problem(root: StorePath) -> str | None:
    """Why a URL store cannot be written (a probe object is written and removed), or None."""
    from store.space import store_problem as space_problem

    problem = space_problem(root, 0)
    return None if problem is None else f"paths.store {problem.split(': ', 1)[1]}"

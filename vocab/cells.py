"""Cells and engine specs: frozen values with stable keys.

A cell is (model, corpus, lever, K, repeat) plus everything that changes its
result; its key hashes that canonical content, so the same cell has the same
key in every process and on every machine, and any result-affecting change
gives a new key. An engine spec is the part that needs an engine restart.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from vocab.schema import CorpusSpec, EngineConfig, LeverSpec, LoadSpec, ModelSpec

# Engine fields that change how a launch is run, not what it measures.
_ENGINE_FIELDS_NOT_IN_KEY = ("command", "start_timeout_s", "stop_timeout_s")
# Load fields that change no cell that runs: allow_repeats only lets a cell run
# that would otherwise stop before launch (its reuse counts are stored); pin_cpus
# only places processes, and the CPU sets are stored with every cell.
_LOAD_FIELDS_NOT_IN_KEY = ("allow_repeats", "pin_cpus")
# Engine fields added later: left out of the key at their default, so every
# existing key stays as it was.
_ENGINE_DEFAULTS_NOT_IN_KEY = {"compilation": {}, "cudagraph_capture_floor": 512}
# Load fields added later, likewise.
_LOAD_DEFAULTS_NOT_IN_KEY = {"warmup_ignore_eos": False}
KEY_CHARS = 16


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the same bytes for the same value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def stable_hash(value: Any) -> str:
    """First KEY_CHARS hex digits of sha256 over canonical_json(value)."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:KEY_CHARS]


def without_defaults(fields: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """`fields` less the fields added later that still hold their default: older keys stay as they were."""
    return {name: value for name, value in fields.items() if name not in defaults or value != defaults[name]}


def engine_identity(engine: EngineConfig) -> dict[str, Any]:
    """The engine settings that affect results (the command and timeouts do not)."""
    fields = asdict(engine)
    for name in _ENGINE_FIELDS_NOT_IN_KEY:
        fields.pop(name)
    return without_defaults(fields, _ENGINE_DEFAULTS_NOT_IN_KEY)


def load_identity(load: LoadSpec, repeat: int) -> dict[str, Any]:
    """The load settings that affect results, and the prompt seed of repeats after the first.

    Repeat r shuffles with seed + r (workers/load/prompts.py:prompt_seed); only
    repeats > 0 carry it, so repeat-0 keys stay as they were and repeats
    measured with the old shared order are measured again.
    """
    fields = asdict(load)
    for name in _LOAD_FIELDS_NOT_IN_KEY:
        fields.pop(name)
    fields = without_defaults(fields, _LOAD_DEFAULTS_NOT_IN_KEY)
    if repeat:
        fields["prompt_seed"] = load.seed + repeat
    return fields


# The lever every other is compared with, for speed and for outputs.
REFERENCE_LEVER = "van"
# Speculative methods whose drafts come from what the engine served before
# (suffix decoding's global tree of earlier responses).
HISTORY_METHODS = ("suffix",)


def drafts_from_history(lever: LeverSpec) -> bool:
    """Whether the lever drafts from the engine's history: suffix, bestkpad, dynk."""
    return lever.spec_method in HISTORY_METHODS


# Draft hooks the switch plugin (lever_plugins/switch.py) selects between cells, by the plugin a
# lever requires (None: plain suffix decoding), and the environment each may set.
SWITCH_HOOKS = {None: "suffix", "kpad": "kpad", "dynk": "dynk"}
HOOK_ENV_PREFIXES = {"suffix": (), "kpad": ("LEVER_KPAD",), "dynk": ("LEVER_DYNK",)}
# Lever fields that reach the engine only through the draft hook's environment (or not at all):
# levers differing only in these launch with the same argv and can share one engine.
_HOOK_ONLY_LEVER_FIELDS = ("name", "description", "ks", "dynamic_ks", "requires_plugin", "env")


def draft_hook(lever: LeverSpec) -> str | None:
    """The switch plugin's hook for this lever's drafts, or None when it cannot share a launch.

    suffix, bestkpad (kpad) and dynk: suffix decoding whose drafts a plugin
    reshapes inside vLLM. A lever whose environment sets anything besides its
    own plugin's settings changes the engine for every lever on it, so it keeps
    a launch of its own.
    """
    if lever.spec_method != "suffix" or lever.requires_plugin not in SWITCH_HOOKS:
        return None
    hook = SWITCH_HOOKS[lever.requires_plugin]
    prefixes = HOOK_ENV_PREFIXES[hook]
    if any(not (prefixes and name.startswith(prefixes)) for name in lever.env):
        return None
    return hook


@dataclass(frozen=True)
class EngineSpec:
    """What one `vllm serve` launch is: cells that share it run on one engine."""

    model: ModelSpec
    lever: LeverSpec
    k: int  # speculative tokens; 0 for levers without drafts
    engine: EngineConfig

    @property
    def key(self) -> str:
        return stable_hash(
            {
                "model": asdict(self.model),
                "lever": asdict(self.lever),
                "k": self.k,
                "engine": engine_identity(self.engine),
            }
        )

    @property
    def label(self) -> str:
        lever = f"{self.lever.name}-k{self.k}" if self.k else self.lever.name
        return f"{self.model.name}/{lever}"

    @property
    def shared_key(self) -> str:
        """The launch this spec shares with others of the same argv (grid.engine_reuse=shared).

        suffix K, bestkpad K and dynk with max K = K differ only in their draft
        hook: they get one key. Every other spec keeps its own (its `key`).
        """
        if draft_hook(self.lever) is None:
            return self.key
        lever = asdict(self.lever)
        for name in _HOOK_ONLY_LEVER_FIELDS:
            lever.pop(name)
        return stable_hash(
            {
                "shared": True,
                "model": asdict(self.model),
                "lever": lever,
                "k": self.k,
                "engine": engine_identity(self.engine),
            }
        )


@dataclass(frozen=True)
class Cell:
    """One measurement: an engine spec driven with one corpus under one load."""

    engine_spec: EngineSpec
    corpus: CorpusSpec
    load: LoadSpec
    repeat: int = 0
    # Which launch of its engine spec runs this cell (scheduling, not in the key).
    launch: int = 0
    # "start" / "mid<i>" / "end" for a session's drift anchor runs (grid/plan/anchor.py), else None.
    anchor: str | None = None
    # True for the second greedy van run of the same prompts on a fresh engine,
    # the equivalence gate's noise floor (grid/config/expand.py: van_replicates).
    replicate: bool = False
    # grid.engine_reuse=shared (scheduling, not in the key): the launch is shared by every spec of
    # its argv (EngineSpec.shared_key) and reset to fresh before each cell; `block` numbers the
    # cell's block in its launch (the levers of one corpus and prompt draw, in balanced order).
    shared: bool = False
    block: int | None = None

    @property
    def launch_key(self) -> str:
        """The engine launch this cell runs on, with `launch`: its spec's, or the shared one."""
        return self.engine_spec.shared_key if self.shared else self.engine_spec.key

    @property
    def key(self) -> str:
        return stable_hash(
            {
                "engine_spec": self.engine_spec.key,
                "corpus": asdict(self.corpus),
                "load": load_identity(self.load, self.repeat),
                "repeat": self.repeat,
                # Only anchors carry the field, so existing keys stay as they were.
                **({"anchor": self.anchor} if self.anchor else {}),
                **({"replicate": True} if self.replicate else {}),
            }
        )

    @property
    def label(self) -> str:
        anchor = f"/anchor-{self.anchor}" if self.anchor else ""
        replicate = "/replicate" if self.replicate else ""
        return f"{self.engine_spec.label}/{self.corpus.name}/r{self.repeat}{anchor}{replicate}"

    def as_record(self) -> dict[str, Any]:
        """Flat, JSON-able description stored beside the cell's results."""
        spec = self.engine_spec
        return {
            "cell_key": self.key,
            "engine_key": spec.key,
            "model": spec.model.name,
            "lever": spec.lever.name,
            "k": spec.k,
            "corpus": self.corpus.name,
            "repeat": self.repeat,
            "anchor": self.anchor,
            "replicate": self.replicate,
            "concurrency": self.load.concurrency,
            "max_tokens": self.load.max_tokens,
            "config_json": canonical_json(
                {
                    "model": asdict(spec.model),
                    "lever": asdict(spec.lever),
                    "k": spec.k,
                    "engine": asdict(spec.engine),
                    "corpus": asdict(self.corpus),
                    "load": asdict(self.load),
                    "repeat": self.repeat,
                }
            ),
        }

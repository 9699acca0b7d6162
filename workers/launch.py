"""One engine launch: its command, its log, its plugin check, and the fresh state each cell starts from."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.fs import StorePath, StoreRoot
from store.layout import StoreLayout
from store.phases import PhaseBoard
from vocab.cells import EngineSpec, draft_hook, drafts_from_history
from vocab.errors import EngineError
from vocab.groups import EngineGroup
from workers.context import RunContext
from workers.engine import registry as engine_registry
from workers.engine.args import launch_argv, launch_env
from workers.engine.process import LOG_TAIL_LINES, Engine, log_tail, new_endpoint
from workers.engine.reset import ResetReport, reset_engine
from workers.engine.served import ServedPrompts
from workers.signals.host import NODE_CPUS


def engine_base_env() -> dict[str, str]:
    """This process's environment minus what Ray sets for its own workers.

    Ray pins OMP_NUM_THREADS=1 in worker processes, which would starve the CPU
    engine's OpenMP kernels; engine.env may set it explicitly.
    """
    return {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}


def engine_version(base_url: str, api_key: str) -> str | None:
    request = urllib.request.Request(base_url + "/version", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return str(json.loads(resp.read()).get("version"))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class LaunchLog:
    """Where one launch's engine log is written (`path`) and kept (`stored`, in the store).

    A URL store (store/fs.py): the engine logs to a file on this node, copied to
    the store after each cell and when it stops; on a local store they are one file.
    """

    path: Path
    stored: StoreRoot

    @classmethod
    def for_group(cls, group: EngineGroup, ctx: RunContext) -> LaunchLog:
        layout = StoreLayout(ctx.store_root)
        stored = layout.engine_log(ctx.session_id, f"{group.spec.key}-{uuid.uuid4().hex[:6]}")
        if isinstance(stored, StorePath):
            return cls(local_log(ctx, stored), stored)
        return cls(stored, stored)

    @property
    def remote(self) -> bool:
        return isinstance(self.stored, StorePath)

    def upload(self) -> None:
        """The log so far into the store, so a teammate can read it while the group runs."""
        if isinstance(self.stored, StorePath):
            upload_log(self.path, self.stored)


def build_engine(group: EngineGroup, ctx: RunContext, log_path: Path, remote: bool) -> Engine:
    """The group's launch, not started: its argv and environment, on every core of the worker."""
    registry_dir = engine_registry.node_dir(ctx.cache_dir if remote else ctx.store_root)
    # Engines of earlier runs on this node whose owner died and whose guard did not end them.
    for line in engine_registry.sweep(registry_dir):
        print(f"lever-grid: {line}", file=sys.stderr, flush=True)
    endpoint = new_endpoint()
    return Engine(
        launch_argv(group, endpoint, ctx.models_dir),
        launch_env(group, engine_base_env(), ctx.cache_dir),
        endpoint,
        log_path,
        group.spec.engine.start_timeout_s,
        group.spec.engine.stop_timeout_s,
        registry_dir=registry_dir,
        cpus=NODE_CPUS,  # every core of the worker, whatever a cell's client pin left it (relaunches too)
    )


def missing_plugin(group: EngineGroup, log_path: Path) -> str | None:
    """Why a lever's plugin is not active in the started engine, or None when it is.

    vLLM logs a plugin that fails to import and starts anyway, so a lever
    would silently measure plain suffix decoding. The plugin logs
    `lever_plugins <name>: wrapped ...` once it is in place (lever_plugins/proposer_patch.py);
    on a shared launch that is the switch (lever_plugins/switch.py), whatever its levers.
    """
    spec = group.spec
    name = "switch" if group.switches_hook else spec.lever.requires_plugin
    if name is None:
        return None
    text = log_path.read_text(errors="replace") if log_path.is_file() else ""
    if f"lever_plugins {name}: wrapped" in text:
        return None
    return (
        f"lever '{spec.lever.name}' needs the vLLM plugin '{name}', but the engine started without it "
        "(no 'wrapped' line in its log); install this project into the engine's Python "
        "(pip install -e .) so vLLM finds its `vllm.general_plugins` entry point"
    )


@dataclass
class LaunchState:
    """What one engine launch has been through, as the cells of its group run on it."""

    ready_s: float
    # Corpora its cells sent since the engine started (or was relaunched), reset or not.
    earlier: list[str] = field(default_factory=list)
    # Prompts sent since the engine was last fresh (started, relaunched or reset).
    served: ServedPrompts = field(default_factory=ServedPrompts)
    first_index: int = 0  # the group's first cell on this engine (a relaunch starts a new one)


def ready_for_cell(
    group: EngineGroup, index: int, engine: Engine, launch: LaunchState, board: PhaseBoard
) -> dict[str, Any]:
    """Bring the engine to the state cell `index` starts from; return the cell's history columns.

    A drafting engine that served earlier cells is reset to fresh (docs/reset.md);
    a shared launch is reset before every cell, selecting the cell's draft hook
    (lever_plugins/switch.py). A reset that fails relaunches the engine (and
    selects the hook on it); EngineError when that fails too.
    """
    cell = group.cells[index]
    lever = cell.engine_spec.lever
    endpoint = engine.endpoint
    hook = draft_hook(lever) if group.switches_hook else None
    reset, relaunched = None, False
    if group.resets and (launch.earlier or hook is not None):
        reset = reset_engine(endpoint.base_url, endpoint.api_key, hook=hook)
    if reset is not None and not reset.ok:
        print(f"lever-grid: reset failed ({reset.problem}); relaunching the engine", file=sys.stderr)
        board.say(cell.label, "engine relaunch")
        launch.ready_s = engine.relaunch()
        launch.earlier, launch.served, launch.first_index, relaunched = [], ServedPrompts(), index, True
        if hook is not None:  # the relaunched engine starts on plain suffix decoding
            reset = reset_engine(endpoint.base_url, endpoint.api_key, hook=hook)
            if not reset.ok:
                raise EngineError(
                    f"draft hook '{hook}' not selected on the relaunched engine: {reset.problem}"
                )
    elif reset is not None:
        launch.served = ServedPrompts()  # its prefix cache and suffix tree hold nothing it was sent
    history = {
        # Suffix decoding's tree remembers earlier outputs: say what this engine served before.
        "engine_earlier_corpora": ",".join(launch.earlier) or None,
        "engine_cell_index": index,
        # Its share of the launch's start, for where the GPU time went: a relaunch's start is
        # shared by the cells left to it (the first launch's, planned for all, then reads low).
        "engine_start_share_s": launch.ready_s / (len(group.cells) - launch.first_index),
        "gpus": group.spec.model.tp,
        **suffix_cache_columns(cell.engine_spec, fresh=not launch.earlier or bool(reset and reset.ok)),
        **reset_columns(reset, relaunched),
        "engine_shared": group.shared,
        "engine_levers": ",".join(group.levers),
        "block": cell.block,
        "engine_launch_id": engine.log_path.stem,  # one per launch, its relaunches included
    }
    # The hook that shaped this cell's drafts: what the reset left, else the lever's own.
    if history["draft_hook"] is None and drafts_from_history(lever):
        history["draft_hook"] = draft_hook(lever) or lever.name
    return history


def suffix_cache_columns(spec: EngineSpec, fresh: bool) -> dict[str, Any]:
    """The suffix-decoding cache this cell drafted from: the settings passed and whether it started empty.

    Settings not passed are vLLM's defaults (SpeculativeConfig.suffix_decoding_*,
    e.g. max_cached_requests 10000 in vLLM 0.26-0.32): the JSON holds only what
    this launch set, beside the engine version that fixes the rest.
    """
    if not drafts_from_history(spec.lever):
        return {"suffix_cache_fresh": None, "suffix_cache_settings": None}
    settings = {k: v for k, v in spec.lever.speculative_extra.items() if k.startswith("suffix_decoding_")}
    return {"suffix_cache_fresh": fresh, "suffix_cache_settings": json.dumps(settings, sort_keys=True)}


def reset_columns(reset: ResetReport | None, relaunched: bool = False) -> dict[str, Any]:
    """What the reset before this cell found and left; engine_relaunched when it failed (docs/reset.md)."""
    columns = ResetReport.empty_columns() if reset is None else reset.columns()
    return {**columns, "engine_relaunched": None if reset is None else relaunched or not reset.ok}


def local_log(ctx: RunContext, stored: StorePath) -> Path:
    """Where a node writes an engine's log before it goes to a URL store: <cache_dir>/logs/<session>/."""
    return ctx.cache_dir / "logs" / ctx.session_id / stored.name


def upload_log(local: Path, stored: StorePath) -> None:
    """Copy an engine log to the store whole; a store that refuses it loses the log, not the cells."""
    try:
        if local.is_file():
            stored.store.put_file(local, stored.key)
    except OSError as exc:
        print(f"lever-grid: engine log {local} not copied to {stored}: {exc}", file=sys.stderr, flush=True)


def stored_log_tail(path: StoreRoot) -> str:
    """The tail of an engine log in the store (local or URL)."""
    if isinstance(path, StorePath):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return ""
        return "".join(text.splitlines(keepends=True)[-LOG_TAIL_LINES:])
    return log_tail(path)

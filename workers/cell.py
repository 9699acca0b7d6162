"""Measure one cell on a running engine: warm-up, the measured load, the drain, the logprob probe.

Each stage ends by checking the engine is whole and its answers were not errors
(check_answers); the cell's columns are put together in workers/summary.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vocab.cells import Cell, EngineSpec
from vocab.errors import EngineError, GridError
from vocab.schema import EquivalenceConfig
from workers.context import RunContext
from workers.engine.args import RESET_EXTENSION, served_name
from workers.engine.process import Engine
from workers.engine.reset import hook_window_columns, read_hook_counters
from workers.engine.served import ServedPrompts
from workers.engine.tree import EngineProcess, http_errors, names, rejected_line, server_error_line
from workers.load.client import LoopLag, RequestRecord, Target, run_load, run_measured, run_sync, warmup_load
from workers.load.probe import ProbeError, ProbeRow, run_probe
from workers.load.prompts import Prompt, cell_schedule, check_planned, corpus_file, probe_prompts, read_corpus
from workers.phases import PhaseClock
from workers.signals import cudagraph_log, dynk_log
from workers.signals.counters import ServerCounters, scrape
from workers.signals.gpu_telemetry import GpuSampler
from workers.signals.host import HostSampler, apply_pins, plan_columns
from workers.signals.server_load import LoadSample, ServerLoadSampler
from workers.summary import prompt_columns, summarize

# How long a failed cell waits for a dying engine to exit before blaming what failed instead.
ENGINE_EXIT_GRACE_S = 3.0

OnStage = Callable[[str], None]


class CellStage:
    """What a cell was doing, for naming the stage in which its engine died; each change goes to
    `on_change` (the engine's phase file, store/phases.py, which the driver logs)."""

    def __init__(self, name: str = "start of the cell", on_change: OnStage | None = None) -> None:
        self._name = name
        self.on_change = on_change

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        if self.on_change is not None:
            self.on_change(value)


class EngineDied(EngineError):
    """A process of the engine (API server, EngineCore, a worker) ended while a cell was using it."""

    def __init__(self, lost: list[EngineProcess], seen: str = "") -> None:
        super().__init__(f"engine died: {names(lost)} gone")
        self.lost = lost
        # How the death showed in the cell's requests (`HTTP 500 to 16 of 24 requests`), if it did.
        self.seen = seen


class ServerFailed(EngineError):
    """The server answered requests with HTTP 5xx while all of its processes ran."""


class RequestsRejected(GridError):
    """The server refused the cell's requests (HTTP 4xx): its configuration, not a measurement."""


def ensure_alive(engine: Engine) -> None:
    """Raise EngineDied at the end of a stage in which a process of the engine ended."""
    if lost := engine.lost():
        raise EngineDied(lost)


def check_answers(engine: Engine, records: list[RequestRecord], stage: str) -> None:
    """After a load: the engine whole, and no request the server failed (5xx) or refused (4xx).

    A dead process comes first, whatever the requests saw (a dead EngineCore
    shows as HTTP 500 and streams that end in an error while the API server
    runs on): a 5xx or an error inside a stream waits a moment for it to show.
    """
    statuses = [r.http_status for r in records]
    bodies = [r.error_message for r in records]
    failed = http_errors(statuses, bodies, 500)
    streams_failed = any(r.error_type == "server_error" for r in records)
    lost = engine.wait_lost(ENGINE_EXIT_GRACE_S) if failed or streams_failed else engine.lost()
    if lost:
        raise EngineDied(lost, f"HTTP {failed.status} to {failed.share()}" if failed else "")
    if failed:
        raise ServerFailed(server_error_line(failed, stage))
    if (refused := http_errors(statuses, bodies, 400)) is not None:
        raise RequestsRejected(rejected_line(refused, stage))


def run_cell(
    cell: Cell,
    engine: Engine,
    ctx: RunContext,
    served: ServedPrompts | None = None,
    stage: CellStage | None = None,
) -> tuple[list[RequestRecord], dict[str, Any], list[ProbeRow]]:
    """Warm up, measure one cell on a running engine, then run the logprob probe; return the
    requests (warm-up, then measured; each says its phase), the cell's measured columns and the
    probe's rows.

    `served` holds what this engine launch was sent before the cell; the cell's
    own prompts are added to it as they go out, whatever becomes of the cell.
    `stage` is kept up to date, so a failure can say when the engine died.
    """
    served = served if served is not None else ServedPrompts()
    stage = stage if stage is not None else CellStage()
    clock = PhaseClock()
    planned = ctx.corpus_sha256.get(cell.corpus.name)
    corpus_path = corpus_file(ctx.data_dir, cell.corpus.path, ctx.cache_dir, planned)
    corpus = read_corpus(corpus_path, cell.corpus.format, cell.corpus.skip_bad_rows)
    check_planned(corpus, cell.corpus.name, corpus_path, planned)
    plan = cell_schedule(cell, corpus, cell.load.allow_repeats)
    reuse = served.measured_reuse(plan.warmup, plan.measured, cell.corpus.name, cell.repeat)
    endpoint = engine.endpoint
    target = Target(endpoint.base_url, endpoint.api_key, served_name(cell.engine_spec), cell.corpus.endpoint)
    served.add(plan.warmup, cell.corpus.name, cell.repeat)
    # The engine's tree and this client on disjoint cores where the node has enough (workers/signals/host.py).
    processes = engine_processes(engine)
    pins = apply_pins(processes, cell.load.pin_cpus)
    stage.name = "warm-up"
    warm_load = warmup_load(cell.load)  # to max_tokens where load.warmup_ignore_eos asks for full waves
    warmup = run_sync(run_load(target, plan.warmup, warm_load, phase="warmup")) if plan.warmup else []
    check_answers(engine, warmup, stage.name)
    clock.lap("warmup")
    marks = LogMarks.before_window(cell, engine, warmed=bool(plan.warmup))
    stage.name = "measured load"
    load = measure(cell, engine, target, plan.measured, processes, marks, served, clock)
    stage.name = "drain after the measured load"
    figures = summarize(load.records, load.delta, load.cpu_s, load.lag, cell.load.concurrency, ctx.gates,
                        load.server_load, load.scrapes_failed_ns,
                        engine_wait_share=load.host.engine_wait_share())  # fmt: skip
    columns = {
        **figures,
        **load.host.columns(),
        **plan_columns(pins),
        **prompt_columns(cell, corpus, plan, reuse),
        **load.gpu.columns(figures["output_tokens"]),
        **drain_columns(cell, engine, marks, load),
    }
    clock.lap("drain")
    stage.name = "logprob probe"
    chosen = probe_prompts(corpus.prompts, ctx.gates.equivalence.probe_prompts)
    served.add(chosen, cell.corpus.name, cell.repeat)
    probe, probe_columns = run_cell_probe(target, chosen, ctx.gates.equivalence)
    ensure_alive(engine)
    clock.lap("probe")
    # The warm-up's requests are stored too (phase 'warmup'): the equivalence gate judges their
    # outputs beside the measured ones (gates.equivalence.judge_warmup); nothing else reads them.
    return [*warmup, *load.records], {**columns, **probe_columns, **clock.columns()}, probe


@dataclass(frozen=True)
class LogMarks:
    """Where the cell's share of the engine's log begins, and its plugin hook's counters then."""

    tables: bool  # whether the launch logs CUDA-graph tables
    flush_s: float  # how long a table can take to come
    cudagraph_offset: int
    dynk_offset: int
    hook: str | None
    hooks_before: dict | None

    @classmethod
    def before_window(cls, cell: Cell, engine: Engine, warmed: bool) -> LogMarks:
        tables = logs_cudagraph_tables(cell.engine_spec)
        flush_s = cudagraph_log.flush_timeout_s(engine.env)
        offset = cudagraph_log.log_size(engine.log_path)
        if tables and warmed:
            # Warm-up steps go into a table before this cell's share of the log begins.
            offset = cudagraph_log.wait_for_table(engine.log_path, offset, flush_s)
        # dynk's warm-up totals land in its log before the window opens (returns at once for other levers).
        dynk_offset = dynk_log.wait_for_idle_line(engine.log_path)
        # The plugin's own counters around the window, through the reset extension where it is loaded.
        hook = plugin_hook(cell, engine)
        endpoint = engine.endpoint
        hooks_before = read_hook_counters(endpoint.base_url, endpoint.api_key) if hook else None
        return cls(tables, flush_s, offset, dynk_offset, hook, hooks_before)


@dataclass(frozen=True)
class MeasuredLoad:
    """The measured requests and what was sampled around them."""

    records: list[RequestRecord]
    lag: LoopLag
    cpu_s: float  # this client's CPU time over the load
    delta: ServerCounters  # the server's counters after the load less those before it
    server_load: list[LoadSample]
    scrapes_failed_ns: list[int]  # when each /metrics scrape of the server_load sampler failed
    host: HostSampler
    gpu: GpuSampler
    log_end: int  # the engine log's size when the load ended
    hooks_after: dict | None


def measure(
    cell: Cell,
    engine: Engine,
    target: Target,
    prompts: list[Prompt],
    processes: list[EngineProcess],
    marks: LogMarks,
    served: ServedPrompts,
    clock: PhaseClock,
) -> MeasuredLoad:
    """The measured load, from the counters read before it to the ones after it."""
    endpoint = engine.endpoint
    before = scrape(endpoint.base_url, endpoint.api_key)
    served.add(prompts, cell.corpus.name, cell.repeat)
    clock.lap("settle")
    cpu_start_s = time.process_time()
    with (
        GpuSampler() as gpu,
        ServerLoadSampler(endpoint.base_url, endpoint.api_key) as server_load,
        HostSampler(processes) as host,
    ):
        records, lag = run_sync(run_measured(target, prompts, cell.load, phase="measure"))
    cpu_s = time.process_time() - cpu_start_s
    check_answers(engine, records, "measured load")
    clock.lap("measure")
    log_end = cudagraph_log.log_size(engine.log_path)
    delta = scrape(endpoint.base_url, endpoint.api_key).minus(before)
    hooks_after = read_hook_counters(endpoint.base_url, endpoint.api_key) if marks.hook else None
    sampled = (server_load.samples, server_load.failed_ns)
    return MeasuredLoad(records, lag, cpu_s, delta, *sampled, host, gpu, log_end, hooks_after)


def drain_columns(cell: Cell, engine: Engine, marks: LogMarks, load: MeasuredLoad) -> dict[str, Any]:
    """What the engine's log and the lever's plugin say of the measured load: CUDA-graph modes,
    the hook's counters, dynk's choices of K."""
    # The first table logged after the measured requests holds their last steps (the probe comes after).
    log_end = None
    if marks.tables:
        log_end = cudagraph_log.wait_for_table(engine.log_path, load.log_end, marks.flush_s)
    columns = {
        **cudagraph_log.columns_since(engine.log_path, marks.cudagraph_offset, log_end),
        **hook_window_columns(marks.hook, marks.hooks_before, load.hooks_after),
    }
    # On a shared launch the dynk hook's lines go on while other levers run: only a dynk cell reads them.
    if cell.engine_spec.lever.requires_plugin == "dynk":
        return {**columns, **dynk_log.columns_when_idle(engine.log_path, marks.dynk_offset)}
    return {**columns, **dynk_log.EMPTY_COLUMNS}


def engine_processes(engine: Engine) -> list[EngineProcess]:
    """The API server and the processes below it that were the engine when it became ready."""
    root = engine.root()
    return ([root] if root else []) + [info for info, _ in engine.watched]


def logs_cudagraph_tables(spec: EngineSpec) -> bool:
    """Whether this launch logs vLLM's CUDA-graph tables (`--cudagraph-metrics` in its arguments)."""
    args = [*spec.engine.extra_args, *spec.model.extra_args, *spec.lever.extra_args]
    return "--cudagraph-metrics" in args and not spec.engine.enforce_eager


def run_cell_probe(
    target: Target, chosen: list[Prompt], cfg: EquivalenceConfig
) -> tuple[list[ProbeRow], dict[str, Any]]:
    """The logprob probe on the chosen prompts, after the measurement (workers/load/probe.py).

    A probe that fails leaves the measurement standing: the error is a column,
    and the equivalence gate then has no distribution to judge.
    """
    hashes = {"probe_prompt_hashes": json.dumps([p.content_hash for p in chosen])}
    if not chosen:
        return [], {**hashes, "probe_prompts": 0, "probe_positions": 0, "probe_error": None}
    try:
        rows = run_probe(target.base_url, target.api_key, target.model, chosen, cfg.probe_top_k)
    except ProbeError as exc:
        return [], {**hashes, "probe_prompts": 0, "probe_positions": 0, "probe_error": str(exc)[:500]}
    return rows, {**hashes, "probe_prompts": len(chosen), "probe_positions": len(rows), "probe_error": None}


def plugin_hook(cell: Cell, engine: Engine) -> str | None:
    """The plugin hook (kpad, dynk) whose counters the cell reads through the reset extension, or
    None: a lever without a plugin, or an engine launched without the extension."""
    # The plugin the lever needs names its hook, on a shared launch or one of its own alike
    # (reset_ext.hook_counters keys both by it), as the dynk columns below are chosen.
    hook = cell.engine_spec.lever.requires_plugin
    return hook if hook in ("kpad", "dynk") and RESET_EXTENSION in engine.argv else None

"""All of the project's Ray code: one placement group + actor per engine group.

Each engine group gets one bundle {CPU: n, GPU: tp} in a STRICT_PACK placement
group (all its GPUs on one node); its actor starts `vllm serve` (mp backend) as
a child and runs the group's cells in turn. Largest bundles are submitted
first, a bounded number are in flight, completions are taken with ray.wait.
Retries are the driver's: Ray never restarts an actor or retries a task, and
failed cells go back on the queue as a smaller group, up to max_attempts; only
those whose failure another attempt could get past (CellOutcome.retryable: not a
changed corpus, a bad config, refused requests, a group no node can hold). A cell
measured INVALID only because the host was busy goes back too, up to
run.host_invalid_reruns times (host_again). While the phases run, a thread
checks that the Ray head answers (watching_head): Ray ends a driver whose head is
gone a minute later with its own message, and the run must end first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psutil
import ray
from ray.exceptions import RayError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from grid.orchestrate.lease import CellLeases
from grid.orchestrate.stop import Stop, Stopped
from vocab.errors import GridError
from vocab.groups import EngineGroup
from vocab.schema import RayConfig
from workers.runner import CellOutcome, RunContext, record_interrupted, record_lost, run_group

# How long one ray.wait blocks: the driver looks at its stop flag (Ctrl-C, SIGTERM) this often.
WAIT_S = 0.5
# How long a stop waits for the cluster to kill actors or to let the driver go.
CLEANUP_S = 10.0
# A local cluster whose start times out on a starved host is started again, this many times in all,
# after LOCAL_START_BACKOFF_S x the attempt number.
LOCAL_START_ATTEMPTS = 3
LOCAL_START_BACKOFF_S = 5.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class EngineWorker:
    """Holds one engine group's resources; its engine is a child process of this actor."""

    def run(self, group: EngineGroup, ctx: RunContext) -> list[CellOutcome]:
        node_id = ray.get_runtime_context().get_node_id()
        return run_group(group, dataclasses.replace(ctx, node_id=node_id))


@dataclass
class Launch:
    group: EngineGroup
    attempt: int
    actor: Any = None
    pg: Any = None
    started_s: float = 0.0  # epoch s, to tell this launch's manifests from earlier ones
    # Cell key -> times it was measured again because the host was busy (host_again).
    busy_reruns: dict[str, int] = dataclasses.field(default_factory=dict)


def task_error(exc: RayError) -> str:
    """A Ray error as one line: the worker's own exception when there is one, no colour codes."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and not isinstance(cause, RayError):
        text = f"{type(cause).__name__}: {cause}"
    else:
        text = str(exc)
    lines = [ln.strip() for ln in ANSI.sub("", text).splitlines() if ln.strip()]
    return f"worker lost ({type(exc).__name__}): {lines[0] if lines else ''}"


# The Ray head: how often the driver checks that its GCS answers (a TCP connect, each given
# HEAD_CONNECT_S), and how long it may not before the run ends. Ray ends a driver whose GCS has not
# answered for gcs_rpc_server_reconnect_timeout_s (60 s by default) with its own message; the run's
# end (its cells in flight recorded, the session's end written, its own line) must come first.
HEAD_POLL_S = 2.0
HEAD_CONNECT_S = 2.0
HEAD_LOST_S = 10.0


def head_address() -> str | None:
    """The GCS address ('127.0.0.1:6379') of the cluster this process is connected to, else None."""
    with contextlib.suppress(Exception):
        return str(ray.get_runtime_context().gcs_address) or None
    return None


def answers(address: str, timeout_s: float = HEAD_CONNECT_S) -> bool:
    """Whether something accepts a TCP connection at `address` ('host:port')."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def watching_head(
    on_lost: Callable[[str, float], None],
    address: str | None = None,
    poll_s: float = HEAD_POLL_S,
    lost_after_s: float = HEAD_LOST_S,
    probe: Callable[[str], bool] = answers,
) -> Iterator[None]:
    """While the block runs, a daemon thread checks every `poll_s` that the Ray head (`address`, else
    this process's cluster's) answers; once it has not for `lost_after_s`, it calls
    `on_lost(address, since_s)` once, from that thread (`since_s`: epoch s of the first check that
    failed). Only the cluster's head is watched: a node lost is a lost worker (record_lost)."""
    address = address or head_address()
    done = threading.Event()

    def watch() -> None:
        since_s: float | None = None
        while address and not done.wait(poll_s):
            if probe(address):
                since_s = None
                continue
            since_s = since_s or time.time()
            if time.time() - since_s >= lost_after_s and not done.is_set():
                on_lost(address, since_s)
                return

    thread = threading.Thread(target=watch, name="ray-head-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


# Whether init_ray connected this process (a caller's own ray.init, a test's or a notebook's, is theirs).
_STARTED = False
# A local cluster's agents, children of its raylet: a SIGKILL'd driver's sit at PPID 1 for a minute.
# (Not the head's dashboard.py nor the GCS: those of a live `ray start` cluster sit at PPID 1 too.)
RAY_AGENTS = ("ray/dashboard/agent.py", "ray/_private/runtime_env/agent/main.py")
# The same agents once they have set their process title (what /proc/<pid>/cmdline then shows).
RAY_AGENT_TITLES = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


def started_here() -> bool:
    """Whether init_ray connected this process to Ray (and so the run may shut it down)."""
    return _STARTED and ray.is_initialized()


def is_ray_agent(cmdline: list[str]) -> bool:
    """An agent by its title (`ray::DashboardAgent`) or by the script it runs.

    The script must be an argument of its own: the raylet's command line carries the agents'
    command inside one of its flags (`--dashboard_agent_command=... ray/dashboard/agent.py ...`).
    """
    if cmdline and cmdline[0].strip() in RAY_AGENT_TITLES:
        return True
    return any(not part.startswith("-") and part.endswith(RAY_AGENTS) for part in cmdline)


def is_raylet(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error, IndexError):
        return proc.name() == "raylet" or os.path.basename(proc.cmdline()[0]) == "raylet"
    return False


def orphaned_agents() -> list[int]:
    """Pids of this user's Ray agents whose raylet is gone: a killed driver's.

    An orphan is reparented to init or to a subreaper (systemd --user, a container's init), so it is
    told by its parent not being a raylet, not by its parent's pid.
    """
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "uids", "cmdline"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if proc.info["uids"].real != os.getuid() or not is_ray_agent(proc.info["cmdline"] or []):
                continue
            if proc.info["ppid"] <= 0 or not is_raylet(psutil.Process(proc.info["ppid"])):
                found.append(proc.info["pid"])
    return found


def sweep_agents(timeout_s: float = 5.0) -> list[int]:
    """End the Ray agents a SIGKILL'd driver left behind (as the next worker sweeps engines); their pids."""
    procs = []
    for pid in orphaned_agents():
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    return end_processes(procs, timeout_s)


def end_processes(procs: list[psutil.Process], timeout_s: float) -> list[int]:
    """SIGTERM each, SIGKILL what is still alive after timeout_s; the pids that were signalled."""
    signalled = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
            signalled.append(proc)
    _, alive = psutil.wait_procs(signalled, timeout=timeout_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    return [proc.pid for proc in signalled]


# Ray (2.5x+) logs "Token authentication is enabled for this Ray cluster" on starting a local cluster.
TOKEN_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"


def quiet_token_notice() -> None:
    """Drop that notice for the local cluster this run starts: a stderr line through the live bar on
    every run. Token auth stays on (Ray's default) and the cluster binds to loopback; a warning that
    auth is *disabled*, on joining someone's cluster, is not touched (this is called for local only)."""
    logging.getLogger(TOKEN_NOTICE_LOGGER).setLevel(logging.ERROR)


def init_ray(ray_cfg: RayConfig) -> list[int]:
    """Join ray.address; else the job's cluster under `ray job submit`; else start a local one.

    Without an address Ray would otherwise join whatever `ray start` last left
    in /tmp/ray, even a cluster that has since died; `ray.address=auto` asks
    for that explicitly. A local cluster is started only after the agents of a
    killed driver's one are ended: their pids are returned.
    """
    global _STARTED
    if ray.is_initialized():
        return []
    address = ray_cfg.address or os.environ.get("RAY_ADDRESS") or "local"
    swept = sweep_agents() if address == "local" else []
    connect(address)
    _STARTED = True
    return swept


def connect(address: str) -> None:
    """ray.init as a run calls it. A caller that connects this way first (tests/engine's one local
    cluster for its in-process runs) keeps its Ray: a run neither starts another nor ends it.
    A local start that times out (a starved host, start_timed_out) is tried again, up to
    LOCAL_START_ATTEMPTS in all, after ending what the failed start left running."""
    if address != "local":
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        return
    quiet_token_notice()
    for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
        before = {proc.pid for proc in psutil.Process().children(recursive=True)}
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                _node_ip_address="127.0.0.1",  # a local cluster serves this machine only
            )
            return
        except Exception as exc:
            if not start_timed_out(exc):
                raise
            # What the failed start left running (its GCS, agents) would hold ports and cores.
            left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
            end_processes(left, timeout_s=5.0)
            with contextlib.suppress(Exception):
                ray.shutdown()
            if attempt == LOCAL_START_ATTEMPTS:
                raise RayStartError(
                    f"the local Ray cluster did not start in {LOCAL_START_ATTEMPTS} tries ({exc}); on a "
                    "busy host Ray's raylet gives its agents only 15 s (ray-project/ray#65983): free some "
                    "cores, or start a cluster with `ray start --head` and pass ray.address"
                ) from exc
            print(
                f"the local Ray cluster did not start ({exc}); trying again ({attempt + 1} of "
                f"{LOCAL_START_ATTEMPTS})",
                file=sys.stderr,
            )
            time.sleep(LOCAL_START_BACKOFF_S * attempt)


class RayStartError(GridError, RuntimeError):
    """The local Ray cluster did not start in LOCAL_START_ATTEMPTS tries: the command line says so in
    one line with the fix (a GridError), not a traceback."""


def start_timed_out(exc: BaseException) -> bool:
    """Is this ray.init's error for a local node whose raylet or GCS did not come up in time?

    A starved host can make the raylet die at start (its fixed 15 s wait for the dashboard agent's
    port file, ray-project/ray#65983); ray.init then says the node "timed out during startup"
    (Ray's node.py) or times out waiting for the node's object store (services.wait_for_node).
    Such a start can succeed on the next try; any other error is the caller's to fix.
    """
    text = str(exc)
    return "timed out during startup" in text or (
        isinstance(exc, TimeoutError) and "waiting for node to startup" in text
    )


def bundle(group: EngineGroup, ray_cfg: RayConfig) -> dict[str, float]:
    resources = {"CPU": ray_cfg.cpus_per_engine}
    if ray_cfg.use_gpus:
        resources["GPU"] = float(group.gpus)
    return resources


def largest_node(resource: str) -> float:
    """The most of `resource` any alive node of the cluster has."""
    return max((n["Resources"].get(resource, 0.0) for n in ray.nodes() if n["Alive"]), default=0.0)


def unplaceable(group: EngineGroup, ray_cfg: RayConfig) -> str | None:
    """Why no node of the cluster can ever hold the group's bundle, if none can."""
    for resource, amount in bundle(group, ray_cfg).items():
        if amount > largest_node(resource):
            return (
                f"needs {amount:g} {resource} on one node but the largest node has "
                f"{largest_node(resource):g}; use a bigger cluster or lower tp/ray.cpus_per_engine"
            )
    return None


def in_flight_limit(ray_cfg: RayConfig) -> int:
    """ray.max_in_flight, or what the cluster could hold at once when it is 0 (1 before Ray is up)."""
    if ray_cfg.max_in_flight > 0:
        return ray_cfg.max_in_flight
    if not ray.is_initialized():
        return 1
    resources = ray.cluster_resources()
    if ray_cfg.use_gpus:
        return max(1, int(resources.get("GPU", 0)))
    return max(1, int(resources.get("CPU", 0) // max(ray_cfg.cpus_per_engine, 1e-9)))


def start(launch: Launch, ctx: RunContext, ray_cfg: RayConfig, worker_cls: Any) -> Any:
    resources = bundle(launch.group, ray_cfg)
    launch.pg = placement_group([resources], strategy="STRICT_PACK")
    launch.actor = worker_cls.options(
        num_cpus=resources["CPU"],
        num_gpus=resources.get("GPU", 0),
        max_restarts=0,
        max_task_retries=0,
        scheduling_strategy=PlacementGroupSchedulingStrategy(launch.pg, placement_group_bundle_index=0),
    ).remote()
    launch.started_s = time.time()
    return launch.actor.run.remote(launch.group, ctx)


def finish(launch: Launch) -> None:
    """Kill the actor (its engine follows) and free the bundle."""
    if launch.actor is not None:
        ray.kill(launch.actor, no_restart=True)
    if launch.pg is not None:
        remove_placement_group(launch.pg)


def run_phases(
    phases: list[list[EngineGroup]],
    ctx: RunContext,
    ray_cfg: RayConfig,
    max_attempts: int = 1,
    on_outcome: Callable[[CellOutcome], None] = lambda _: None,
    stop: Stop | None = None,
    leases: CellLeases | None = None,
    on_tick: Callable[[], None] = lambda: None,
    host_reruns: int = 0,
) -> list[CellOutcome]:
    """Run the phases one after another (a phase starts when the previous one has settled).

    The drift anchor needs this: its start cell before any other, its end cell after all.
    When `stop` is set (by a signal handler, or by a cell whose store cannot take
    results) the in-flight actors are killed (their engines follow), their
    unfinished cells recorded as interrupted, and Stopped raised with every outcome.
    With `leases` (grid/orchestrate/lease.py) a group starts with only the cells this driver
    holds a lease on (other drivers measure the rest); its leases go when it settles.
    `on_tick` is called after every wait for results (every WAIT_S at most), e.g. to read
    what each engine is doing (store/phases.py). A cell INVALID only because the host was busy is
    measured again on a fresh engine, `host_reruns` times at most (retry, host_again).
    """
    init_ray(ray_cfg)
    worker_cls = ray.remote(EngineWorker)
    stop = stop if stop is not None else Stop()
    outcomes: list[CellOutcome] = []
    for groups in phases:
        outcomes += _run_phase(
            groups, ctx, ray_cfg, max_attempts, on_outcome, worker_cls, stop, outcomes, leases, on_tick,
            host_reruns,
        )  # fmt: skip
    return outcomes


def _run_phase(
    groups: list[EngineGroup],
    ctx: RunContext,
    ray_cfg: RayConfig,
    max_attempts: int,
    on_outcome: Callable[[CellOutcome], None],
    worker_cls: Any,
    stop: Stop,
    earlier: list[CellOutcome],
    leases: CellLeases | None = None,
    on_tick: Callable[[], None] = lambda: None,
    host_reruns: int = 0,
) -> list[CellOutcome]:
    queue = deque(Launch(g, 1) for g in sorted(groups, key=lambda g: -g.gpus))
    in_flight: dict[Any, Launch] = {}
    outcomes: list[CellOutcome] = []
    limit = in_flight_limit(ray_cfg)

    def settle(launch: Launch, results: list[CellOutcome]) -> None:
        if leases is not None:
            leases.release(launch.group)
        for outcome in results:
            on_outcome(outcome)
        outcomes.extend(results)
        if not stop and (fatal := next((o for o in results if o.stops_run), None)):
            stop.reason = fatal.error
        if (again := retry(launch, results, max_attempts, host_reruns)) is not None:
            queue.append(again)

    def stop_now() -> Stopped:
        engines = len(in_flight)
        return Stopped(stop, earlier + outcomes + interrupt(in_flight, ctx, stop, on_outcome), engines)

    while queue or in_flight:
        if stop:
            raise stop_now()
        while queue and len(in_flight) < limit and not stop:  # nothing new once stopping
            launch = queue.popleft()
            if reason := unplaceable(launch.group, ray_cfg):
                settle(launch, record_lost(launch.group, ctx, f"unplaceable: {reason}", retryable=False))
                continue
            if leases is not None:  # only the cells no other driver is measuring
                if (held := leases.take(launch.group)) is None:
                    continue
                launch = dataclasses.replace(launch, group=held)
            in_flight[start(launch, ctx, ray_cfg, worker_cls)] = launch
        stop.engines = len(in_flight)
        if not in_flight:
            continue
        ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=WAIT_S)
        on_tick()
        for ref in ready:
            launch = in_flight.pop(ref)
            try:
                results = ray.get(ref)
            except RayError as exc:
                results = record_lost(launch.group, ctx, task_error(exc))
            finish(launch)
            settle(launch, results)
    if stop:
        raise stop_now()
    return outcomes


def retry(
    launch: Launch, results: list[CellOutcome], max_attempts: int, host_reruns: int = 0
) -> Launch | None:
    """The launch's next attempt: its cells that failed in a way another attempt could get past
    (CellOutcome.retryable), while attempts are left, and those INVALID only because the host was
    busy (host_again), while `host_reruns` (run.host_invalid_reruns) are left; None when there is
    nothing to run again."""
    failed = {o.cell_key for o in results if o.status != "ok" and o.retryable}
    failed = failed if launch.attempt < max_attempts else set()
    busy = host_again(results, launch.busy_reruns, host_reruns)
    if not failed and not busy:
        return None
    cells = tuple(c for c in launch.group.cells if c.key in failed | busy)
    reruns = {c.key: launch.busy_reruns.get(c.key, 0) + (c.key in busy) for c in cells}
    return Launch(
        dataclasses.replace(launch.group, cells=cells), launch.attempt + bool(failed), busy_reruns=reruns
    )


def host_again(results: list[CellOutcome], done: dict[str, int], most: int) -> set[str]:
    """Cells measured INVALID only for the host's sake (CellOutcome.host_bound: engine starved of
    cores, event-loop lag) that are measured again on a fresh engine: those measured again so for
    fewer than `most` times (`done`, by cell key). A busy machine's INVALID may pass when measured
    again; a structural one (a window its corpus cannot fill) would not, and is not."""
    return {
        o.cell_key
        for o in results
        if o.status == "ok" and o.valid is False and o.host_bound and done.get(o.cell_key, 0) < most
    }


def within(seconds: float, work: Callable[[], None]) -> bool:
    """Run `work` in a daemon thread; False if it has not finished after `seconds`.

    SIGTERM to a whole process group (`timeout`, systemd, a pod's deletion) also
    ends the local cluster's GCS and raylet, after which every Ray call blocks for
    a minute and then aborts the process: the stop must not wait on them.
    """
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def disconnect(seconds: float = CLEANUP_S) -> bool:
    """Leave the cluster; False when it no longer answers (the caller exits without Ray's atexit).

    Once left, the next ray.init is not this process's to end: a stale flag would make a later run
    shut down a cluster its caller (a test's, a notebook's) connected afterwards.
    """
    global _STARTED
    left = within(seconds, ray.shutdown)
    _STARTED = False
    return left


def interrupt(
    in_flight: dict[Any, Launch], ctx: RunContext, stop: Stop, on_outcome: Callable[[CellOutcome], None]
) -> list[CellOutcome]:
    """Kill every in-flight actor (its engine's guard ends the engine); record its unfinished cells.

    When the cluster no longer answers, its actors are gone with it and the
    guards end their engines; the cells are recorded all the same. After the
    head was lost (stop.cluster_gone already) nothing is asked of it: each call would wait.
    """
    launches = list(in_flight.values())
    if not stop.cluster_gone:
        stop.cluster_gone = not within(CLEANUP_S, lambda: [finish(launch) for launch in launches])
    outcomes = []
    for launch in in_flight.values():
        for outcome in record_interrupted(
            launch.group, ctx, launch.started_s, f"interrupted: {stop.reason}", stop.at_s
        ):
            on_outcome(outcome)
            outcomes.append(outcome)
    in_flight.clear()
    return outcomes

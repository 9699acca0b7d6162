"""Where the engine and the client run, and whether the engine's host threads waited for a core (issue 27).

On a host-bound engine (a small model, suffix drafting: steps of a few ms with
the GPU mostly idle) the engine's Python threads are the bottleneck, and a
client or anything else on their cores moves the figure. Each cell therefore

- records the CPU sets of the engine's processes (API server, EngineCore,
  workers) and of the client (this process): `cpus_engine_core`, ...;
- with `load.pin_cpus=auto`, where the node has enough cores, pins the engine's
  process tree and the client to disjoint sets before the cell (`pin_plan`
  says the sizing rule); on fewer cores it pins nothing and says why;
- reads, over the measured load, each process group's CPU time and run-queue
  wait from /proc/<pid>/task/<tid>/schedstat (field 1: ns on a core, field 2:
  ns runnable but waiting for one) and its context switches from .../status,
  summed over every thread (a process's own /proc/<pid>/schedstat counts only
  its main thread).

The gate (workers/signals/gates.py) judges `engine_wait_share`: of the time the
EngineCore's and workers' threads wanted a core, the share they spent waiting
for one. 0 is an engine that never waited; a CPU hog on its cores drives it
towards 1/2 and beyond.

Pure functions plus small readers of /proc and os.sched_*affinity.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.engine.tree import API_SERVER, EngineProcess

PROC = Path("/proc")
# Fewer usable cores than this and `auto` pins nothing: taking one core for the
# client would leave the engine at most 2, and its API server, EngineCore and
# tokenizer threads would contend among themselves instead.
MIN_CORES_TO_PIN = 4
# From this many cores the client gets two: its event loop and its sampler threads.
CLIENT_TWO_CORES_FROM = 16


@dataclass(frozen=True)
class ThreadCounters:
    """One thread's cumulative scheduler counters."""

    cpu_ns: int
    wait_ns: int
    nvcsw: int
    nivcsw: int


def parse_schedstat(text: str) -> tuple[int, int]:
    """/proc/.../schedstat: (ns on a core, ns runnable but waiting for one)."""
    fields = text.split()
    return int(fields[0]), int(fields[1])


def parse_switches(status: str) -> tuple[int, int]:
    """/proc/.../status: (voluntary, involuntary) context switches."""
    voluntary = involuntary = 0
    for line in status.splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            voluntary = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches:"):
            involuntary = int(line.split()[1])
    return voluntary, involuntary


def read_threads(pid: int, proc: Path = PROC) -> dict[int, ThreadCounters]:
    """Every thread of `pid` now, by tid; {} for a process that is gone or unreadable."""
    out: dict[int, ThreadCounters] = {}
    try:
        tids = [int(p.name) for p in (proc / str(pid) / "task").iterdir()]
    except OSError:
        return out
    for tid in tids:
        task = proc / str(pid) / "task" / str(tid)
        try:
            cpu_ns, wait_ns = parse_schedstat((task / "schedstat").read_text())
            voluntary, involuntary = parse_switches((task / "status").read_text())
        except (OSError, ValueError, IndexError):
            continue
        out[tid] = ThreadCounters(cpu_ns, wait_ns, voluntary, involuntary)
    return out


@dataclass(frozen=True)
class Usage:
    """What a group of processes did over a span: CPU and run-queue wait seconds, switches."""

    wall_s: float
    cpu_s: float
    wait_s: float
    nvcsw: int
    nivcsw: int

    @property
    def wait_share(self) -> float | None:
        """Run-queue wait / (wait + time on a core): how much of its runnable time it waited."""
        wanted = self.cpu_s + self.wait_s
        return self.wait_s / wanted if wanted > 0 else None

    @property
    def cpu_share(self) -> float | None:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else None

    @property
    def nvcsw_per_s(self) -> float | None:
        """Voluntary switches a second: the threads blocking (on I/O, a lock, an idle GPU)."""
        return self.nvcsw / self.wall_s if self.wall_s > 0 else None

    @property
    def nivcsw_per_s(self) -> float | None:
        return self.nivcsw / self.wall_s if self.wall_s > 0 else None


def usage(before: Mapping[int, ThreadCounters], after: Mapping[int, ThreadCounters], wall_s: float) -> Usage:
    """Counters over the span: threads present at its end, less what they had at its start.

    A thread born inside the span counts whole; one that ended inside it is lost
    (its last counters are not readable), which understates, never overstates.
    """
    zero = ThreadCounters(0, 0, 0, 0)
    cpu = wait = voluntary = involuntary = 0
    for tid, end in after.items():
        start = before.get(tid, zero)
        cpu += max(0, end.cpu_ns - start.cpu_ns)
        wait += max(0, end.wait_ns - start.wait_ns)
        voluntary += max(0, end.nvcsw - start.nvcsw)
        involuntary += max(0, end.nivcsw - start.nivcsw)
    return Usage(wall_s, cpu / 1e9, wait / 1e9, voluntary, involuntary)


def cpu_list(cpus: Iterable[int]) -> str:
    """`0-3,8,10-11`, the kernel's own notation; `` for none."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def parse_cpu_list(text: str) -> set[int]:
    """The inverse of cpu_list (and of /sys's thread_siblings_list)."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass(frozen=True)
class PinPlan:
    """Disjoint CPU sets for the engine's process tree and the client, or why there are none."""

    engine: tuple[int, ...] = ()
    client: tuple[int, ...] = ()
    reason: str = ""

    @property
    def pinned(self) -> bool:
        return bool(self.engine and self.client)


def pin_plan(allowed: Iterable[int], mode: str, siblings: Mapping[int, set[int]] | None = None) -> PinPlan:
    """The sizing rule of `load.pin_cpus=auto`.

    Of the n cores this process may use: fewer than MIN_CORES_TO_PIN, no pinning
    (said in `reason`). Otherwise the client takes the last core (the last two
    from CLIENT_TWO_CORES_FROM cores), together with that core's SMT siblings so
    it shares no physical core with the engine, and the engine's tree takes every
    other allowed core.
    """
    cores = sorted(set(allowed))
    if mode == "off":
        return PinPlan(reason="load.pin_cpus=off")
    if len(cores) < MIN_CORES_TO_PIN:
        return PinPlan(
            reason=f"{len(cores)} cores: too few to give the client its own "
            f"(pinning needs >= {MIN_CORES_TO_PIN}); engine and client share them"
        )
    want = 2 if len(cores) >= CLIENT_TWO_CORES_FROM else 1
    client: set[int] = set()
    for core in reversed(cores):
        if len(client) >= want:
            break
        client.add(core)
        client.update(c for c in (siblings or {}).get(core, {core}) if c in cores)
    engine = [c for c in cores if c not in client]
    if len(engine) < MIN_CORES_TO_PIN - 1:
        return PinPlan(reason=f"{len(cores)} cores in {len(client)} SMT siblings: too few for the engine")
    return PinPlan(tuple(engine), tuple(sorted(client)))


def node_siblings(cores: Iterable[int]) -> dict[int, set[int]]:
    """Each core's SMT siblings as /sys gives them (itself alone where it says nothing)."""
    out = {}
    for core in cores:
        path = Path(f"/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list")
        try:
            out[core] = parse_cpu_list(path.read_text())
        except (OSError, ValueError):
            out[core] = {core}
    return out


def pin_process(pid: int, cpus: Iterable[int], proc: Path = PROC) -> None:
    """Every thread of `pid` onto `cpus` (sched_setaffinity sets one thread; new threads inherit)."""
    cpus = set(cpus)
    try:
        tids = [int(p.name) for p in (proc / str(pid) / "task").iterdir()]
    except OSError:
        return
    for tid in tids:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(tid, cpus)


def affinity(pid: int) -> set[int]:
    """The CPU set of `pid`'s main thread; empty for a process that is gone."""
    try:
        return set(os.sched_getaffinity(pid))
    except OSError:
        return set()


def groups(processes: Sequence[EngineProcess], client_pid: int) -> dict[str, list[int]]:
    """Pids by group: `api_server`; `engine_core`, EngineCore and any workers (what the gate judges);
    `core_only` and `workers`, the same split in two; `client`."""
    return {
        "api_server": [p.pid for p in processes if p.role == API_SERVER],
        "engine_core": [p.pid for p in processes if p.role != API_SERVER],
        "core_only": [p.pid for p in processes if p.depth == 1],
        "workers": [p.pid for p in processes if p.depth >= 2],
        "client": [client_pid],
    }


# The cores this process could use when it started, before any pinning of its own.
NODE_CPUS = frozenset(affinity(os.getpid()))


def apply_pins(processes: Sequence[EngineProcess], mode: str, client_pid: int | None = None) -> PinPlan:
    """Pin the engine's tree and the client (this process) per `pin_plan`; return the plan."""
    client_pid = client_pid or os.getpid()
    allowed = set(NODE_CPUS) | set().union(*(affinity(p.pid) for p in processes))
    plan = pin_plan(allowed, mode, node_siblings(allowed))
    if plan.pinned:
        for process in processes:
            pin_process(process.pid, plan.engine)
        pin_process(client_pid, plan.client)
    return plan


def plan_columns(plan: PinPlan) -> dict[str, Any]:
    return {
        "cpus_pinned": plan.pinned,
        "cpus_pin_note": plan.reason or None,
    }


class HostSampler:
    """Scheduler counters of the engine's processes and the client over a span (a `with` block)."""

    def __init__(self, processes: Sequence[EngineProcess], client_pid: int | None = None) -> None:
        self.groups = groups(processes, client_pid or os.getpid())
        self.before: dict[str, dict[int, ThreadCounters]] = {}
        self.after: dict[str, dict[int, ThreadCounters]] = {}
        self.cpus: dict[str, set[int]] = {}
        self.start_ns = self.end_ns = 0

    def _read(self) -> dict[str, dict[int, ThreadCounters]]:
        out: dict[str, dict[int, ThreadCounters]] = {}
        for name, pids in self.groups.items():
            merged: dict[int, ThreadCounters] = {}
            for pid in pids:
                merged.update(read_threads(pid))
            out[name] = merged
        return out

    def __enter__(self) -> HostSampler:
        self.cpus = {
            name: set().union(*(affinity(pid) for pid in pids)) if pids else set()
            for name, pids in self.groups.items()
        }
        self.before = self._read()
        self.start_ns = time.monotonic_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        self.after = self._read()
        self.end_ns = time.monotonic_ns()

    def usage(self, name: str) -> Usage | None:
        if not self.groups.get(name) or not self.after.get(name):
            return None
        return usage(self.before.get(name, {}), self.after[name], (self.end_ns - self.start_ns) / 1e9)

    def engine_wait_share(self) -> float | None:
        found = self.usage("engine_core")
        return found.wait_share if found else None

    def columns(self) -> dict[str, Any]:
        """cpus_<group> (CPU lists), cpus_shared_engine_client, host_cpus; sched_<group>_* per group."""
        engine = self.cpus.get("api_server", set()) | self.cpus.get("engine_core", set())
        out: dict[str, Any] = {
            "host_cpus": os.cpu_count(),
            "host_loadavg_1m": os.getloadavg()[0],
            "cpus_shared_engine_client": len(engine & self.cpus.get("client", set())),
        }
        for name in self.groups:
            out[f"cpus_{name}"] = cpu_list(self.cpus.get(name, ())) or None
            found = self.usage(name)
            out[f"sched_{name}_cpu_s"] = found.cpu_s if found else None
            out[f"sched_{name}_cpu_share"] = found.cpu_share if found else None
            out[f"sched_{name}_run_wait_s"] = found.wait_s if found else None
            out[f"sched_{name}_wait_share"] = found.wait_share if found else None
            out[f"sched_{name}_nvcsw_per_s"] = found.nvcsw_per_s if found else None
            out[f"sched_{name}_nivcsw_per_s"] = found.nivcsw_per_s if found else None
        out["engine_wait_share"] = out["sched_engine_core_wait_share"]
        return out

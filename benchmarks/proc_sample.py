"""Where the engine's processes and the clients ran, and how long they waited: /proc sampling (issue 27).

Runs as its own process (`python -m benchmarks.proc_sample`) so that sampling costs the measured
clients nothing. It watches two process trees: the engine's (`vllm serve`: the API server at the
root, EngineCore below it, any workers below that) and the client's (the crosscheck process itself,
which is the harness's client, and the `vllm bench serve` it spawns). Every `interval` seconds it
reads, for each thread of each process:

- /proc/<pid>/task/<tid>/stat: CPU ticks (utime + stime) and field 39, the core it last ran on;
  the ticks a thread used since the last sample are put on that core;
- /proc/<pid>/task/<tid>/schedstat, second field: nanoseconds spent runnable but waiting for a
  core (run-queue wait);
- /proc/<pid>/task/<tid>/status: voluntary and involuntary context switches;

and /proc/stat for each core's busy share and the host's steal time. All counters are summed over
threads (a process's own /proc/<pid>/schedstat and status count only its main thread), per sample,
so a process that exits inside a phase (the bench client) keeps what it used up to its last sample.

Protocol on stdin, one command a line:
  begin <label> <json {"engine": pid, "client": pid}>   start a phase; prints `begun` once it has
  end <label> <t0> <t1>      end it; print one JSON line: totals over the phase and over the window
                             [t0, t1] (CLOCK_MONOTONIC seconds, what time.perf_counter reads here)
  quit
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
DISCOVER_EVERY = 5  # samples between walks of the two process trees
ROLES = ("api_server", "engine_core", "engine_worker", "engine_other", "harness", "bench", "client_other")


@dataclass
class TaskCounters:
    """One thread's cumulative counters as /proc gives them."""

    ticks: int
    core: int
    run_delay_ns: int
    nvcsw: int
    nivcsw: int
    comm: str


def read_task(task_dir: Path) -> TaskCounters | None:
    """A thread's counters, or None if it has gone."""
    try:
        stat = (task_dir / "stat").read_text()
        sched = (task_dir / "schedstat").read_text().split()
        status = (task_dir / "status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is field 3 (state)
    nvcsw = nivcsw = 0
    for line in status.splitlines()[-2:]:
        if line.startswith("voluntary_ctxt_switches"):
            nvcsw = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches"):
            nivcsw = int(line.split()[1])
    return TaskCounters(
        ticks=int(fields[11]) + int(fields[12]),
        core=int(fields[36]),
        run_delay_ns=int(sched[1]),
        nvcsw=nvcsw,
        nivcsw=nivcsw,
        comm=comm,
    )


def read_cpu_times() -> dict[str, list[int]]:
    """/proc/stat's cpu lines: name -> [user, nice, system, idle, iowait, irq, softirq, steal, ...]."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu"):
            name, *values = line.split()
            out[name] = [int(v) for v in values[:8]]
    return out


def classify(proc: psutil.Process, engine_root: int, client_root: int) -> str:
    """The role of a process in one of the two trees."""
    if proc.pid == engine_root:
        return "api_server"
    if proc.pid == client_root:
        return "harness"
    try:
        cmdline = " ".join(proc.cmdline())
        name = proc.name()
        parent = proc.ppid()
    except psutil.Error:
        return "engine_other"
    if "drive_vllm_bench" in cmdline or "bench serve" in cmdline:
        return "bench"
    spawned = "EngineCore" in cmdline or "EngineCore" in name or "spawn_main" in cmdline
    if spawned and parent == engine_root:
        return "engine_core"
    if spawned or "Worker" in name:
        return "engine_worker"
    return "client_other" if _descends_from(proc, client_root) else "engine_other"


def _descends_from(proc: psutil.Process, root: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return any(p.pid == root for p in proc.parents())
    return False


@dataclass
class Totals:
    """What one role used over some span."""

    cpu_s: float = 0.0
    run_delay_s: float = 0.0
    nvcsw: int = 0
    nivcsw: int = 0
    cores: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    # per thread (tid): cpu seconds, run-queue wait seconds, its name
    threads: dict[int, list[Any]] = field(default_factory=dict)

    def add(self, tid: int, comm: str, d_ticks: int, core: int, d_delay: int, d_v: int, d_iv: int) -> None:
        cpu = d_ticks * TICK_S
        self.cpu_s += cpu
        self.run_delay_s += d_delay / 1e9
        self.nvcsw += d_v
        self.nivcsw += d_iv
        if cpu:
            self.cores[core] += cpu
        entry = self.threads.setdefault(tid, [comm, 0.0, 0.0, defaultdict(float)])
        entry[1] += cpu
        entry[2] += d_delay / 1e9
        if cpu:
            entry[3][core] += cpu

    def summary(self, wall_s: float) -> dict[str, Any]:
        top = sorted(self.threads.items(), key=lambda kv: -kv[1][1])[:3]
        return {
            "cpu_s": round(self.cpu_s, 3),
            "cpu_share": round(self.cpu_s / wall_s, 3) if wall_s > 0 else None,
            "run_delay_s": round(self.run_delay_s, 4),
            "run_delay_share": round(self.run_delay_s / wall_s, 4) if wall_s > 0 else None,
            "nvcsw": self.nvcsw,
            "nivcsw": self.nivcsw,
            "cores": {str(c): round(s, 3) for c, s in sorted(self.cores.items(), key=lambda kv: -kv[1])},
            "top_threads": [
                {
                    "tid": tid,
                    "comm": comm,
                    "cpu_s": round(cpu, 3),
                    "run_delay_s": round(delay, 4),
                    "cores": {
                        str(c): round(s, 3) for c, s in sorted(cores.items(), key=lambda kv: -kv[1])[:4]
                    },
                }
                for tid, (comm, cpu, delay, cores) in top
            ],
        }


class Watcher:
    """Samples the two trees in a thread; phases are begun and ended from stdin."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.lock = threading.Lock()
        self.roots: dict[str, int] = {}
        self.procs: dict[int, tuple[psutil.Process, str]] = {}
        self.last: dict[tuple[int, int], TaskCounters] = {}
        self.affinity: dict[int, list[int]] = {}
        self.seen: dict[int, str] = {}  # every process seen since the roots were set: its role
        # per sample: (t, {role: [(tid, comm, d_ticks, core, d_delay, d_v, d_iv), ...]}, cpu deltas)
        self.samples: list[tuple[float, dict[str, list[tuple[int, str, int, int, int, int, int]]], dict]] = []
        self.last_cpu: dict[str, list[int]] = read_cpu_times()
        self.phase_start: float | None = None
        self.n = 0

    def discover(self) -> None:
        own = os.getpid()
        found: dict[int, tuple[psutil.Process, str]] = {}
        for key in ("engine", "client"):
            root_pid = self.roots.get(key)
            if root_pid is None:
                continue
            try:
                root = psutil.Process(root_pid)
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            for proc in tree:
                if proc.pid == own or proc.pid in found:
                    continue
                known = self.procs.get(proc.pid)
                role = known[1] if known else classify(proc, self.roots["engine"], self.roots["client"])
                found[proc.pid] = (proc, role)
                self.seen[proc.pid] = role
                # Read again at every discovery, not once: a process first seen before it was pinned
                # (an engine starting under the last launch's roots) kept its old set (H200, 2026-12-03).
                with contextlib.suppress(psutil.Error, AttributeError):
                    self.affinity[proc.pid] = sorted(proc.cpu_affinity() or [])
        self.procs = found

    def sample(self) -> None:
        if self.n % DISCOVER_EVERY == 0:
            self.discover()
        self.n += 1
        t = time.perf_counter()
        rows: dict[str, list[tuple[int, str, int, int, int, int, int]]] = defaultdict(list)
        for pid, (_, role) in list(self.procs.items()):
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid_s in tids:
                tid = int(tid_s)
                now = read_task(Path(f"/proc/{pid}/task/{tid_s}"))
                if now is None:
                    continue
                before = self.last.get((pid, tid))
                self.last[(pid, tid)] = now
                if before is None:
                    if self.phase_start is None:
                        continue
                    # born inside the phase: everything it has counted is the phase's
                    before = TaskCounters(0, now.core, 0, 0, 0, now.comm)
                rows[role].append(
                    (
                        tid,
                        now.comm,
                        now.ticks - before.ticks,
                        now.core,
                        now.run_delay_ns - before.run_delay_ns,
                        now.nvcsw - before.nvcsw,
                        now.nivcsw - before.nivcsw,
                    )
                )
        cpu_now = read_cpu_times()
        cpu_delta = {
            k: [a - b for a, b in zip(v, self.last_cpu.get(k, v), strict=False)] for k, v in cpu_now.items()
        }
        self.last_cpu = cpu_now
        if self.phase_start is not None:
            self.samples.append((t, dict(rows), cpu_delta))

    def loop(self) -> None:
        while True:
            with self.lock:
                if self.roots:
                    self.sample()
            time.sleep(self.interval_s)

    def begin(self, roots: dict[str, int]) -> None:
        with self.lock:
            if roots != self.roots:
                self.roots, self.procs, self.last, self.n, self.seen = roots, {}, {}, 0, {}
            self.phase_start = None
            self.sample()  # the baseline
            self.phase_start = time.perf_counter()
            self.samples = []

    def end(self, t0: float, t1: float) -> dict[str, Any]:
        with self.lock:
            self.sample()
            samples, start = self.samples, self.phase_start or 0.0
            self.phase_start, self.samples = None, []
        end_t = samples[-1][0] if samples else time.perf_counter()
        out: dict[str, Any] = {"interval_s": self.interval_s, "n_samples": len(samples)}
        for span, lo, hi in (("phase", start, end_t), ("window", t0, t1)):
            # a sample's deltas cover the interval up to its time: keep those ending inside the span
            kept = [s for s in samples if lo < s[0] <= hi + self.interval_s / 2]
            totals: dict[str, Totals] = defaultdict(Totals)
            cpu: dict[str, list[int]] = {}
            for _, rows, cpu_delta in kept:
                for role, entries in rows.items():
                    for entry in entries:
                        totals[role].add(*entry)
                for k, v in cpu_delta.items():
                    cpu[k] = [a + b for a, b in zip(cpu.get(k, [0] * len(v)), v, strict=False)]
            wall = hi - lo
            out[span] = {
                "wall_s": round(wall, 3),
                "roles": {role: totals[role].summary(wall) for role in ROLES if role in totals},
                "host": host_summary(cpu),
            }
        out["affinity"] = {
            role: sorted({tuple(self.affinity.get(pid, [])) for pid, r in self.seen.items() if r == role})
            for role in ROLES
        }
        out["pids"] = {role: sorted(pid for pid, r in self.seen.items() if r == role) for role in ROLES}
        return out


def host_summary(cpu: dict[str, list[int]]) -> dict[str, Any]:
    """Steal share of all cores and each core's busy share over the summed /proc/stat deltas."""
    total = cpu.get("cpu")
    if not total or sum(total) == 0:
        return {}
    per_core = {}
    for name, v in cpu.items():
        if name == "cpu" or sum(v) == 0:
            continue
        idle = v[3] + v[4]
        per_core[name.removeprefix("cpu")] = round(1 - idle / sum(v), 3)
    return {
        "steal_share": round(total[7] / sum(total), 4),
        "busy_share": round(1 - (total[3] + total[4]) / sum(total), 3),
        "core_busy": per_core,
    }


def affinity_text(cores: list[int]) -> str:
    """0-15 for a run of cores, 0,2,4 otherwise."""
    if not cores:
        return "-"
    runs, start, prev = [], cores[0], cores[0]
    for c in [*cores[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        runs.append(f"{start}-{prev}" if prev > start else str(start))
        if c is not None:
            start = prev = c
    return ",".join(runs)


class Client:
    """The crosscheck's handle on a watcher process."""

    def __init__(self, interval_s: float) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.proc_sample", str(interval_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def begin(self, label: str, engine_pid: int) -> None:
        assert self.proc.stdin is not None
        roots = {"engine": engine_pid, "client": os.getpid()}
        self.proc.stdin.write(f"begin {label} {json.dumps(roots)}\n")
        self.proc.stdin.flush()
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # the watcher's acknowledgement: the phase has begun

    def end(self, label: str, t0: float, t1: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"end {label} {t0} {t1}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()


def main() -> None:
    watcher = Watcher(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1)
    threading.Thread(target=watcher.loop, daemon=True).start()
    for line in sys.stdin:
        cmd, *args = line.split(maxsplit=2)
        if cmd == "begin":
            watcher.begin({k: int(v) for k, v in json.loads(args[1]).items()})
            print("begun", flush=True)
        elif cmd == "end":
            t0, t1 = (float(x) for x in args[1].split())
            print(json.dumps(watcher.end(t0, t1)), flush=True)
        elif cmd == "quit":
            break


if __name__ == "__main__":
    main()

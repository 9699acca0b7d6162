"""What the engine-starvation gate reads with and without a CPU hog on the engine's cores (issue 27).

One real CPU engine (the smoke grid's van spec, SmolLM2), then cells in rounds:
each round measures one cell unloaded and one with H busy-loop processes pinned
onto the engine's CPU set (for each H in --hogs), in that order. Per cell it
prints what workers/signals/host.py records (EngineCore's run-queue wait share and
involuntary switches a second, the client's CPU share and its own wait share,
the CPU sets) beside the throughput, and the gate's verdict.

  .venv/bin/python -m benchmarks.host_contention --rounds 3 --hogs 1 2 [--nice -10] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from vocab.cells import Cell
from vocab.paths import project_path
from workers.engine.args import serve_argv, serve_env
from workers.engine.process import Engine, new_endpoint
from workers.runner import RunContext, engine_base_env, engine_processes, run_cell

HOG = "while True: pass"
SHOWN = (
    "output_tok_per_s",
    "bench_output_tok_per_s",
    "engine_wait_share",
    "sched_engine_core_nivcsw_per_s",
    "sched_engine_core_cpu_s",
    "sched_engine_core_cpu_share",
    "sched_core_only_wait_share",
    "sched_workers_wait_share",
    "sched_api_server_wait_share",
    "client_cpu_share",
    "sched_client_wait_share",
    "cpus_engine_core",
    "cpus_client",
    "cpus_pinned",
    "valid",
    "invalid_reasons",
)


def start_hogs(n: int, cpus: set[int], nice: int = 0) -> list[subprocess.Popen[bytes]]:
    """`n` busy loops pinned onto `cpus` (the engine's set), each in a session of its own.

    With the kernel's autogroup scheduling (kernel.sched_autogroup_enabled=1, as
    on the 2-core box) CPU is shared between sessions first and by nice only
    within one; the engine runs in its own session (workers/engine/process.py), so a hog
    in the caller's session would compete with the client, not with the engine.
    Each hog is a neighbour of its own, like another tenant's process, at
    autogroup priority `nice`.
    """
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True))
            os.sched_setaffinity(hogs[-1].pid, cpus)
            if nice:
                set_group_nice(hogs[-1].pid, nice)
    except BaseException:
        # Never leave a busy loop behind at high priority: it would starve whatever runs next.
        stop_hogs(hogs)
        raise
    return hogs


def set_group_nice(pid: int, nice: int) -> None:
    """The priority of `pid`'s autogroup (its session), and of its threads; below 0 needs root."""
    # A thread (vLLM starts and ends them) may exit between the listing and the call: it is gone,
    # not an error. Without the right to raise priority, PermissionError goes to the caller.
    with contextlib.suppress(ProcessLookupError, FileNotFoundError):
        set_autogroup_nice(pid, nice)
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                os.setpriority(os.PRIO_PROCESS, int(task.name), nice)


def set_autogroup_nice(pid: int, nice: int) -> bool:
    """Whether `pid`'s autogroup took priority `nice`; False where the kernel has no working autogroup.

    A kernel with autogroup off (sched_autogroup_enabled=0, `noautogroup`) or a task
    outside one answers the write with EINVAL (seen on the CI machine). There
    nice acts across sessions directly, so the per-thread priorities are enough.
    """
    autogroup = Path(f"/proc/{pid}/autogroup")
    if not autogroup.exists():
        return False
    try:
        autogroup.write_text(str(nice))
    except OSError as err:
        if err.errno != errno.EINVAL:
            raise
        return False
    return True


def renice_tree(pids: list[int], nice: int) -> None:
    """The engine's processes and this one (the client), with their sessions, to priority `nice`.

    On a shared machine, other tenants' work at nice 0 then takes little of the
    cores from the engine and the client, so the unloaded cells approach a
    dedicated node's.
    """
    for pid in [*pids, os.getpid()]:
        set_group_nice(pid, nice)


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
        hog.wait()


def smoke_cell(overrides: list[str]) -> tuple[Any, Cell]:
    config = to_config(compose_config(["experiment=smoke", "grid.levers=[van]", *overrides]))
    group = group_by_engine(expand(config))[0]
    return group, group.cells[0]


def smoke_engine(group: Any, overrides: list[str], tmp: Path, session_id: str) -> tuple[RunContext, Engine]:
    """The smoke cell's context and its (not yet started) engine, logging and storing under `tmp`."""
    ctx = RunContext(
        session_id,
        tmp / "store",
        project_path(".cache"),
        project_path(".cache/models"),
        project_path(".cache/data"),
        gates=to_config(compose_config(["experiment=smoke", *overrides])).gates,
    )
    endpoint = new_endpoint()
    engine = Engine(
        serve_argv(group.spec, endpoint, ctx.models_dir),
        serve_env(group.spec, engine_base_env(), ctx.cache_dir),
        endpoint,
        tmp / f"engine-{uuid.uuid4().hex[:6]}.log",
        group.spec.engine.start_timeout_s,
        group.spec.engine.stop_timeout_s,
    )
    return ctx, engine


def measure(rounds: int, hog_counts: list[int], overrides: list[str], nice: int = 0) -> list[dict[str, Any]]:
    group, cell = smoke_cell(overrides)
    tmp = Path(tempfile.mkdtemp(prefix="host-contention-"))
    ctx, engine = smoke_engine(group, overrides, tmp, "host-contention")
    rows: list[dict[str, Any]] = []
    with engine:  # starts it
        core = next(p for p in engine_processes(engine) if p.role != "API server")
        if nice:
            renice_tree([p.pid for p in engine_processes(engine)], nice)
        for r in range(rounds):
            for hogs in [0, *hog_counts]:
                # allow_repeats: every cell of a round reuses the same prompts on purpose (same work each).
                running = start_hogs(hogs, os.sched_getaffinity(core.pid), nice) if hogs else []
                try:
                    _, summary, _ = run_cell(cell, engine, ctx)
                finally:
                    stop_hogs(running)
                row = {"round": r, "hogs": hogs, "loadavg_1m": os.getloadavg()[0]}
                row.update({k: summary.get(k) for k in SHOWN})
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| round | hogs | load avg 1 min | tok/s (window) | tok/s (bench) | EngineCore wait share "
        "| EngineCore nivcsw/s | API server wait share | client CPU share | client wait share | valid |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:

        def f(key: str, fmt: str = ".3f", row: dict[str, Any] = row) -> str:
            value = row.get(key)
            return "-" if value is None else format(value, fmt)

        lines.append(
            f"| {row['round']} | {row['hogs']} | {f('loadavg_1m', '.1f')} | {f('output_tok_per_s', '.1f')} | "
            f"{f('bench_output_tok_per_s', '.1f')} | {f('engine_wait_share')} | "
            f"{f('sched_engine_core_nivcsw_per_s', '.0f')} | {f('sched_api_server_wait_share')} | "
            f"{f('client_cpu_share')} | {f('sched_client_wait_share')} | {row['valid']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hogs", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--nice", type=int, default=0, help="engine, client and hogs at this priority")
    parser.add_argument(
        "overrides",
        nargs="*",
        default=[
            "grid.corpora=[code_complete]",
            "load.num_prompts=24",
            "load.max_tokens=64",
            "load.concurrency=4",
            "load.warmup_requests=4",
            "load.allow_repeats=true",
            "gates.equivalence.probe_prompts=0",
        ],
    )
    args = parser.parse_args(argv)
    rows = measure(args.rounds, args.hogs, args.overrides, args.nice)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

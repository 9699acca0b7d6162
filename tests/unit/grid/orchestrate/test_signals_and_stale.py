"""Issue 28, item 5: a second Ctrl-C says what it does; `status` tells a dead driver's lease from a live
one as `run` does; a dead driver's leases on done cells are cleared; engine temp files in /dev/shm go
with the engine; `plan`'s corpora heading says only what is true; a full store's line says so."""

from __future__ import annotations

import dataclasses
import errno
import subprocess
import sys
import textwrap
import time

from rich.console import Console

from grid.cli.plan_report import corpora_title
from grid.cli.status import status
from grid.orchestrate.lease import clear_stale_on_done
from grid.orchestrate.ledger import DONE
from store.layout import StoreLayout
from store.lease import Lease, all_leases, create, lease_path
from store.space import STORE_UNUSABLE, write_failure
from store.writer import write_ok_attempt
from tests.unit.grid.orchestrate.test_ledger import smoke_cells
from tests.unit.store.test_writer_read import records, tags
from vocab.paths import project_path
from workers.engine.process import KMP_PREFIX, remove_kmp_files

PROJECT = str(project_path("."))


def dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


# --- signals ---------------------------------------------------------------------------------------

SIGNALLED = textwrap.dedent(
    """
    import os, signal, sys, time
    from rich.console import Console
    from grid.orchestrate.run import stop_on_signals
    from grid.orchestrate.stop import Stop

    stop = Stop()
    measuring = sys.argv[1] == "measuring"
    # stdout a pipe: a console's line is buffered, as in a log
    with stop_on_signals(stop, Console(file=sys.stdout), measuring=measuring):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        if measuring:
            assert stop.signum == signal.SIGINT, stop
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    print("not reached")
    """
)


def run_signalled(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SIGNALLED, mode], capture_output=True, text=True, cwd=PROJECT, timeout=60
    )


def test_a_second_ctrl_c_says_exiting_now_and_exits_130():
    done = run_signalled("measuring")
    assert done.returncode == 130, done
    assert "stopping: 0 engines" in done.stdout  # the first one's line, flushed before the exit
    assert "SIGINT again: exiting now" in done.stderr
    assert "not reached" not in done.stdout and "Traceback" not in done.stderr


def test_ctrl_c_after_the_run_ended_exits_at_once_saying_so():
    # The run's end (summary, Ray's shutdown): no "interrupted before anything was launched".
    done = run_signalled("ended")
    assert done.returncode == 130, done
    assert "SIGINT: exiting now (the measurements are stored; the run had ended)" in done.stderr
    assert "before anything was launched" not in done.stderr + done.stdout


# --- status and leases -------------------------------------------------------------------------------


def test_status_calls_a_dead_drivers_unexpired_lease_stale_not_being_measured(tmp_path):
    a, b, _, _ = smoke_cells()
    killed = dataclasses.replace(Lease.new(a.key, "killed-session", 600), pid=dead_pid())
    assert not killed.expired() and create(lease_path(tmp_path, a.key), killed)
    assert create(lease_path(tmp_path, b.key), Lease.new(b.key, "live-session", 600))  # this process
    console = Console(record=True, width=400)
    assert status(["experiment=smoke", f"paths.store={tmp_path}"], console) == 0
    out = console.export_text()
    assert f"stale lease {a.label}: killed-session on " in out
    assert f"its driver (pid {killed.pid}) is gone from this host (no driver holds it; the next run" in out
    assert f"{a.label}: being measured" not in out
    assert f"leased: {b.label}: being measured by live-session on " in out


def test_a_dead_drivers_leases_on_done_cells_are_cleared_and_no_others(tmp_path):
    a, b, c, _ = smoke_cells()
    layout = StoreLayout(tmp_path)
    killed = dataclasses.replace(Lease.new(a.key, "killed", 600), pid=dead_pid())
    expired = dataclasses.replace(Lease.new(b.key, "old", 600), expires_at=time.time() - 60)
    live = Lease.new(c.key, "live", 600)
    for lease in (killed, expired, live):
        assert create(lease_path(tmp_path, lease.cell_key), lease)
    for cell in (a, b, c):  # all three measured since
        write_ok_attempt(layout, tags(cell.key, f"s1-{cell.key[:4]}"), records(1), {"valid": True})
    said = []
    # Only a and c are done here: b's expired lease stays for the run that measures it.
    assert clear_stale_on_done(tmp_path, {a.key: DONE, c.key: DONE}.get, said.append, 600) == 1
    assert sorted(lease.cell_key for lease in all_leases(tmp_path)) == sorted([b.key, c.key])
    assert said == [
        f"lease: removed {killed.holder()}'s lease on done cell {a.key} "
        f"(its driver (pid {killed.pid}) is gone from this host)"
    ]


# --- engine temp files, plan's heading, a full store ------------------------------------------------


def test_the_engines_kmp_files_are_removed_and_no_others(tmp_path):
    mine, other = 4242, 4343
    for name in (f"{KMP_PREFIX}{mine}_0", f"{KMP_PREFIX}{mine}", f"{KMP_PREFIX}{other}_0", "unrelated"):
        (tmp_path / name).write_text("x")
    removed = remove_kmp_files({mine, 99}, tmp_path)
    assert sorted(p.name for p in removed) == [f"{KMP_PREFIX}{mine}", f"{KMP_PREFIX}{mine}_0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{KMP_PREFIX}{other}_0", "unrelated"]


def test_the_corpora_heading_says_only_what_is_true():
    fine = [{"corpus": "a", "prompts_reused": 0, "too_long": 0}]
    assert corpora_title(fine) == (
        "prompts per corpus (every measured prompt new to its engine, every prompt fits)"
    )
    bad = [*fine, {"corpus": "b", "prompts_reused": 0, "too_long": 10}, {"corpus": "c", "error": "gone"}]
    title = corpora_title(bad)
    assert "every prompt fits" not in title
    assert "10 prompts too long for their engine's context" in title and "1 corpus unreadable" in title


def test_a_full_store_says_full_and_not_permissions(tmp_path):
    line = write_failure(tmp_path, OSError(errno.ENOSPC, "No space left on device"))
    assert line == (
        f"{tmp_path} is full (No space left on device); free space there or point paths.store at another disk"
    )
    denied = write_failure(tmp_path, OSError(errno.EACCES, "Permission denied"))
    assert "fix its permissions" in denied
    assert STORE_UNUSABLE == "store cannot take results"


# --- Ray's agents of a killed driver -----------------------------------------------------------------


def test_a_killed_drivers_ray_agents_are_swept_before_a_local_cluster_starts():
    import psutil

    from grid.orchestrate.schedule import orphaned_agents, sweep_agents

    # A stand-in agent whose parent (the raylet) is gone: the middle process exits at once.
    sleeper = "import time; time.sleep(120)"
    middle = (
        "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', "
        f"{sleeper!r}, 'ray/dashboard/agent.py'], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL).pid)"
    )
    spawn = subprocess.run([sys.executable, "-c", middle], capture_output=True, text=True, timeout=30)
    pid = int(spawn.stdout)
    try:
        # Its parent is init or a subreaper now: no raylet either way.
        assert pid in orphaned_agents()
        assert pid in sweep_agents()
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        if psutil.pid_exists(pid):
            psutil.Process(pid).kill()


SUBREAPER = """
import ctypes, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans below come here, not to init
middle = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
print(middle.stdout.strip(), flush=True)
time.sleep(120)
"""


def test_an_agent_orphaned_to_a_subreaper_is_swept_too():
    """systemd --user or a container's init adopts orphans: the agent's parent is then no raylet, not 1."""
    import psutil

    from grid.orchestrate.schedule import orphaned_agents

    middle = (
        "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', 'import time; "
        "time.sleep(120)', 'ray/dashboard/agent.py'], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL).pid)"
    )
    reaper = subprocess.Popen([sys.executable, "-c", SUBREAPER, middle], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(reaper.stdout.readline())
        assert psutil.Process(pid).ppid() == reaper.pid
        assert pid in orphaned_agents()
    finally:
        for proc in psutil.Process(reaper.pid).children():
            proc.kill()
        reaper.kill()
        reaper.wait()


def test_an_agent_under_its_live_raylet_is_not_swept(tmp_path):
    import psutil

    from grid.orchestrate.schedule import orphaned_agents

    # A stand-in raylet (its program is named raylet) with a stand-in agent below it.
    raylet_exe = tmp_path / "raylet"
    raylet_exe.symlink_to(sys.executable)
    raylet = subprocess.Popen(
        [str(raylet_exe), "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
         "'import time; time.sleep(120)', 'ray/dashboard/agent.py']); time.sleep(120)"]
    )  # fmt: skip
    try:
        deadline = time.time() + 10
        while not psutil.Process(raylet.pid).children() and time.time() < deadline:
            time.sleep(0.05)
        [agent] = psutil.Process(raylet.pid).children()
        assert agent.pid not in orphaned_agents()
    finally:
        for proc in psutil.Process(raylet.pid).children():
            proc.kill()
        raylet.kill()
        raylet.wait()


def test_agents_are_told_by_title_or_script_never_by_a_raylets_flags():
    from grid.orchestrate.schedule import is_ray_agent

    assert is_ray_agent(["ray::DashboardAgent", "", ""]) and is_ray_agent(["ray::RuntimeEnvAgent"])
    assert is_ray_agent(["/venv/bin/python", "-u", "/venv/lib/ray/dashboard/agent.py", "--node-ip-address=x"])
    # A raylet names the agents' command inside its flags: sweeping it would end a live cluster.
    raylet = [
        "/venv/lib/ray/core/src/ray/raylet/raylet",
        "--raylet_socket_name=/tmp/ray/s",
        "--dashboard_agent_command=/venv/bin/python -u /venv/lib/ray/dashboard/agent.py --x=1",
        "--runtime_env_agent_command=/venv/bin/python -u /v/ray/_private/runtime_env/agent/main.py",
    ]
    assert not is_ray_agent(raylet)
    assert not is_ray_agent(["/venv/bin/python", "-m", "grid", "run"]) and not is_ray_agent([])


def test_runs_inside_a_run_are_counted_so_only_the_outermost_leaves_ray():
    """Sequential looks and the confirmation are run()s inside a run(): _run leaves Ray only at depth 1."""
    import grid.orchestrate.run

    assert grid.orchestrate.run._RUNS_IN_PROGRESS == 0
    with grid.orchestrate.run.one_ray_session():
        with grid.orchestrate.run.one_ray_session():
            assert grid.orchestrate.run._RUNS_IN_PROGRESS == 2
        assert grid.orchestrate.run._RUNS_IN_PROGRESS == 1
    assert grid.orchestrate.run._RUNS_IN_PROGRESS == 0

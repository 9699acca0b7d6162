"""The busy loops that starve an engine on purpose (benchmarks/host_contention.py) never outlive a failure."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from benchmarks.host_contention import HOG, set_autogroup_nice, set_group_nice, start_hogs, stop_hogs


def hog_pids() -> set[int]:
    """This test process's hogs: `make test` runs tests/engine's host-starvation hogs beside it."""
    found = set()
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if HOG in " ".join(proc.cmdline()):
                found.add(proc.pid)
    return found


def test_hogs_that_cannot_be_placed_are_all_stopped():
    """A CPU set the machine lacks fails the second step of the first hog: nothing is left running."""
    before = hog_pids()
    with pytest.raises(OSError):
        start_hogs(3, {psutil.cpu_count() + 64})
    assert hog_pids() == before


def test_hogs_run_where_they_are_pinned_until_stopped():
    hogs = start_hogs(2, {0})
    try:
        assert all(psutil.Process(h.pid).cpu_affinity() == [0] for h in hogs)
    finally:
        stop_hogs(hogs)
    assert all(h.poll() is not None for h in hogs)


def test_a_kernel_that_refuses_autogroup_priorities_still_gets_thread_priorities(monkeypatch):
    """CI's kernel answers a write to /proc/PID/autogroup with EINVAL: the threads are still reniced."""
    real_write = Path.write_text

    def refuse_autogroup(self: Path, data: str, *args, **kwargs):
        if self.name == "autogroup":
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refuse_autogroup)
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert set_autogroup_nice(child.pid, 7) is False
        set_group_nice(child.pid, 7)  # raising a niceness needs no privilege
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == 7
    finally:
        child.kill()
        child.wait()


def test_a_refused_autogroup_write_other_than_einval_is_not_swallowed(monkeypatch):
    def refuse(self: Path, data: str, *args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(Path, "write_text", refuse)
    with pytest.raises(PermissionError):
        set_group_nice(os.getpid(), -5)

"""The busy loops that starve an engine on purpose (benchmarks/host_contention.py) never outlive a failure."""

from __future__ import annotations

import psutil
import pytest

from benchmarks.host_contention import HOG, start_hogs, stop_hogs


def hog_pids() -> set[int]:
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        if HOG in " ".join(proc.info["cmdline"] or []):
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

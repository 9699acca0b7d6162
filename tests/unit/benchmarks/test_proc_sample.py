"""The crosscheck's watcher (benchmarks/proc_sample.py) reports where a process may run now."""

from __future__ import annotations

import os
import subprocess

import pytest

from benchmarks.proc_sample import Watcher


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to move a process between")
def test_a_process_pinned_after_it_was_first_seen_reports_its_new_cores():
    """On the H200 an engine seen while starting (before its pin) kept its old set in the record."""
    cores = sorted(os.sched_getaffinity(0))
    child = subprocess.Popen(["sleep", "30"])
    try:
        watcher = Watcher(0.1)
        watcher.roots = {"engine": child.pid, "client": os.getpid()}
        watcher.discover()
        assert watcher.affinity[child.pid] == cores
        os.sched_setaffinity(child.pid, {cores[0]})
        watcher.discover()
        assert watcher.affinity[child.pid] == [cores[0]]
    finally:
        child.kill()
        child.wait()

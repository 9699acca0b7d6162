"""store_problem: a store that cannot take a cell's results is named before an engine starts."""

import os
from pathlib import Path

import pytest

from store.space import STORE_UNUSABLE, store_problem


def test_a_writable_store_with_room_has_no_problem(tmp_path):
    assert store_problem(tmp_path / "store") is None
    assert list((tmp_path / "store" / "cells").iterdir()) == []  # the probe file is gone


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_store_is_named_with_the_fix(tmp_path):
    tmp_path.chmod(0o500)
    try:
        problem = store_problem(tmp_path)
    finally:
        tmp_path.chmod(0o700)
    assert problem is not None and problem.startswith(STORE_UNUSABLE) and "not writable" in problem


def test_a_store_path_that_is_a_file_is_named(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("x")
    problem = store_problem(path)
    assert problem is not None and str(path) in problem and "paths.store" in problem


def test_a_store_without_room_for_a_cell_is_named(tmp_path):
    problem = store_problem(tmp_path, min_free_bytes=2**62)
    assert problem is not None and "MiB free" in problem


def test_a_store_where_nothing_can_be_written_is_named():
    # /proc takes no new folders, even for root (the read-only test above is skipped as root).
    problem = store_problem(Path("/proc/lever-grid-store"))
    assert problem is not None and "not writable" in problem

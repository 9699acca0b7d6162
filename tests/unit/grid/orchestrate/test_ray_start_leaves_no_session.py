"""A run whose Ray cluster will not start launched nothing: it ends in one `error:` line (exit 2) and
leaves no session record in the store (the record is written before Ray starts, so a failed start
left a session with no cells and no end for drift and `grid sessions` to count)."""

from __future__ import annotations

import pytest

import grid.orchestrate.schedule
from grid.__main__ import main
from grid.orchestrate.schedule import RayStartError


@pytest.fixture
def ray_will_not_start(monkeypatch):
    def fail(*args, **kwargs):
        raise RayStartError("the local Ray cluster did not start: free cores, or `ray start --head`")

    def refuse(*args, **kwargs):
        raise AssertionError("a launch was reached")

    monkeypatch.setattr(grid.orchestrate.schedule, "init_ray", fail)
    monkeypatch.setattr(grid.orchestrate.schedule, "run_phases", refuse)


def test_a_failed_ray_start_leaves_no_session_record(tmp_path, capsys, ray_will_not_start):
    store = tmp_path / "store"
    assert main(["run", f"paths.store={store}", "experiment=smoke", "session_id=s1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err and err[-1].startswith("error: the local Ray cluster did not start"), err
    assert list(store.rglob("sessions/*.json")) == []

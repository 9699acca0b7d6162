"""A session's end the store will not take is one line, not a traceback, and the run's result stands."""

from __future__ import annotations

from rich.console import Console

import grid.orchestrate.run
import grid.orchestrate.schedule
from grid.config.compose import compose_config
from grid.config.expand import to_config
from grid.orchestrate.stop import Stop
from workers.runner import RunContext


def test_a_session_end_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    store = tmp_path / "store"
    config = to_config(compose_config(["experiment=smoke", f"paths.store={store}"]))
    ctx = RunContext("s1", store, tmp_path, tmp_path, tmp_path)
    # No cluster: nothing to schedule. The session file's first write goes through, its end does not.
    monkeypatch.setattr(grid.orchestrate.schedule, "init_ray", lambda ray_cfg: None)
    monkeypatch.setattr(grid.orchestrate.schedule, "run_phases", lambda *args, **kwargs: [])
    written = []
    real_write = grid.orchestrate.run.write_json

    def write_json(path, data):
        written.append(path)
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        return real_write(path, data)

    monkeypatch.setattr(grid.orchestrate.run, "write_json", write_json)
    console = Console(record=True, width=200)
    assert grid.orchestrate.run.launch([], ctx, config, console, Stop()) == []
    assert len(written) == 2 and written[0] == written[1]
    text = console.export_text()
    assert "store: the session's end could not be written ([Errno 28] No space left on device)" in text
    assert "Traceback" not in text


def test_a_cluster_connected_after_the_run_left_its_own_is_not_the_runs_to_end(monkeypatch):
    """CI's red run: the engine tests' run started and left a local Ray; the scheduling tests then
    connected their own cluster, and the next run shut it down ('Ray has not been started')."""
    connected = {"now": False}
    monkeypatch.setattr(grid.orchestrate.schedule.ray, "is_initialized", lambda: connected["now"])
    monkeypatch.setattr(grid.orchestrate.schedule.ray, "init", lambda **_: connected.update(now=True))
    monkeypatch.setattr(grid.orchestrate.schedule.ray, "shutdown", lambda: connected.update(now=False))
    monkeypatch.setattr(grid.orchestrate.schedule, "sweep_agents", lambda: [])
    monkeypatch.setattr(grid.orchestrate.schedule, "_STARTED", False)
    grid.orchestrate.schedule.init_ray(to_config(compose_config([])).ray)
    assert grid.orchestrate.schedule.started_here()
    assert grid.orchestrate.schedule.disconnect()
    connected["now"] = True  # a caller's own ray.init (a test's cluster, a notebook's)
    assert not grid.orchestrate.schedule.started_here()

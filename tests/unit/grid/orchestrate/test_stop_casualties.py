"""A cell whose engine was ended by the stop is interrupted, not failed (CI, 2026-12-01: a SIGINT
during a cell's warm-up left "failed: engine exited (signal 9) during the warm-up")."""

import time
from types import SimpleNamespace

from grid.orchestrate.ledger import FAILED, INTERRUPTED, build_ledger
from store.layout import StoreLayout
from store.writer import write_failed_attempt, write_ok_attempt
from workers.runner import RunContext, record_interrupted


def setup(tmp_path):
    ctx = RunContext("s1", tmp_path / "store", tmp_path, tmp_path, tmp_path)
    group = SimpleNamespace(cells=[SimpleNamespace(key=k, label=k) for k in ("done", "dying", "earlier")])
    return ctx, group, StoreLayout(ctx.store_root)


def tags(key, attempt):
    return {"session_id": "s1", "cell_key": key, "attempt_id": f"s1-{attempt}"}


def test_a_failure_after_the_stop_is_recorded_as_interrupted(tmp_path):
    ctx, group, layout = setup(tmp_path)
    started_s = time.time() - 5
    write_failed_attempt(layout, tags("earlier", "a"), "engine exited (signal 11) during the load", "")
    time.sleep(1.2)  # more than the second allowed for coarse store clocks
    stop_s = time.time()  # the signal: the cell above failed before it, on its own
    write_ok_attempt(layout, tags("done", "b"), [], {"valid": True, "output_tok_per_s": 1.0})
    write_failed_attempt(layout, tags("dying", "c"), "engine exited (signal 9) during the warm-up", "")
    outcomes = record_interrupted(group, ctx, started_s, "interrupted: SIGINT received", stop_s)
    assert [o.cell_key for o in outcomes] == ["dying"]
    states = build_ledger(ctx.store_root).states
    assert states["dying"].status == INTERRUPTED  # written after the failure: it supersedes it
    assert states["earlier"].status == FAILED  # failed on its own, before the stop


def test_without_a_signal_time_a_failure_stands(tmp_path):
    ctx, group, layout = setup(tmp_path)
    started_s = time.time() - 5
    write_failed_attempt(layout, tags("dying", "c"), "engine exited (signal 9) during the warm-up", "")
    outcomes = record_interrupted(group, ctx, started_s, "interrupted: store refused", None)
    assert sorted(o.cell_key for o in outcomes) == ["done", "earlier"]  # nothing written since the launch
    assert build_ledger(ctx.store_root).states["dying"].status == FAILED

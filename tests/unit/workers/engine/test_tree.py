"""A dead engine process or a server error fails the cell (issue 28 item 1): workers/engine/tree.py,
Engine.lost() and run_group against a stand-in shaped as vLLM's process tree (fake_vllm.py)."""

from __future__ import annotations

import json
import signal
import sys

import pandas as pd
import pytest

from store.read import attempts
from workers.engine.process import Engine, new_endpoint
from workers.engine.tree import (
    EngineProcess,
    death_line,
    http_errors,
    names,
    process_role,
    rejected_line,
    server_error_line,
    server_reason,
)
from workers.runner import run_group

SPAWNED = [
    "/usr/bin/python3",
    "-B",
    "-c",
    "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)",
]
TRACKER = ["/usr/bin/python3", "-c", "from multiprocessing.resource_tracker import main;main(4)"]


@pytest.mark.parametrize(
    ("cmdline", "name", "depth", "role"),
    [
        (["vllm", "serve", "/models/x"], "vllm", 0, "API server"),
        (["VLLM::EngineCore"], "VLLM::EngineCor", 1, "EngineCore"),
        (["VLLM::Worker_TP1 "], "VLLM::Worker_TP", 2, "Worker_TP1"),
        # setproctitle left the command line alone, but not comm
        (SPAWNED, "VLLM::EngineCor", 1, "EngineCor"),
        # untitled: named by where it sits
        (SPAWNED, "python3", 1, "EngineCore"),
        (SPAWNED, "python3", 2, "worker"),
        # not the engine: their ending is not its death
        (TRACKER, "python3", 1, None),
        (["/usr/bin/ninja", "-v"], "ninja", 2, None),
        (["VLLM::"], "python3", 1, None),
    ],
)
def test_engine_processes_are_named_by_title_or_place(cmdline, name, depth, role):
    assert process_role(cmdline, name, depth) == role


API = EngineProcess("API server", 10, 0)
CORE = EngineProcess("EngineCore", 12, 1)
WORKER = EngineProcess("Worker_TP0", 14, 2)


def test_a_dead_child_is_named_beside_its_living_api_server():
    assert death_line([CORE], API, "measured load", None) == (
        "engine died during the measured load: EngineCore (pid 12) gone, API server (pid 10) still up"
    )
    assert names([WORKER, CORE]) == "EngineCore (pid 12) and Worker_TP0 (pid 14)"


def test_a_dead_api_server_keeps_the_documented_prefix():
    line = death_line([CORE, API], API, "warm-up", "signal 9")
    assert (
        line
        == "engine exited (signal 9) during the warm-up: API server (pid 10) and EngineCore (pid 12) gone"
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            '{"error": {"message": "temperature must be non-negative, got -1.0.", "type": "BadRequestError", '
            '"param": null, "code": 400}}',
            "temperature must be non-negative, got -1.0.",
        ),
        (
            '{"object": "error", "message": "The model `x` does not exist.", "code": 404}',
            "The model `x` does not exist.",
        ),
        (
            '{"detail": [{"loc": ["body", "max_tokens"], "msg": "bad"}]}',
            '[{"loc": ["body", "max_tokens"], "msg": "bad"}]',
        ),
        ('{"error": "Unauthorized"}', "Unauthorized"),
        ("Internal Server\n  Error", "Internal Server Error"),
        ("", "(no message)"),
    ],
)
def test_the_servers_reason_is_read_from_its_error_body(body, reason):
    assert server_reason(body) == reason


def test_http_errors_count_one_class_and_quote_the_first():
    statuses = [200, 500, None, 400, 503, 400]
    bodies = [
        None,
        '{"error": {"message": "EngineCore died"}}',
        "timeout",
        '{"message": "bad temp"}',
        "x",
        "y",
    ]
    five = http_errors(statuses, bodies, 500)
    four = http_errors(statuses, bodies, 400)
    assert (five.status, five.count, five.total, five.reason) == (500, 2, 6, "EngineCore died")
    assert (four.status, four.count, four.reason) == (400, 2, "bad temp")
    assert http_errors([200, None], [None, None], 500) is None
    assert rejected_line(four, "warm-up") == (
        "the server rejected 2 of 6 requests of the warm-up with HTTP 400 "
        "(a configuration error, not a measurement): bad temp"
    )
    assert server_error_line(five, "measured load") == (
        "the server answered HTTP 500 to 2 of 6 requests of the measured load: EngineCore died"
    )


FAKE = [sys.executable, "-m", "tests.unit.workers.fake_vllm"]


def test_the_engine_tree_is_watched_from_ready_and_a_dead_engine_core_is_lost(tmp_path):
    endpoint = new_endpoint()
    argv = [*FAKE, "--port", str(endpoint.port), "--api-key", endpoint.api_key]
    with Engine(argv, {}, endpoint, tmp_path / "engine.log", start_timeout_s=60, stop_timeout_s=5) as engine:
        roles = {info.role: proc for info, proc in engine.watched}
        # The spawned child, untitled, is the EngineCore; multiprocessing's resource tracker is no part.
        assert list(roles) == ["EngineCore"], [(i, p.cmdline()) for i, p in engine.watched]
        assert engine.lost() == []
        core = roles["EngineCore"]
        core.send_signal(signal.SIGKILL)
        lost = engine.wait_lost(10)
        assert lost == [EngineProcess("EngineCore", core.pid, 1)]
        assert engine.alive()  # the API server runs on: its death alone would not have shown
    assert not engine.alive()


def failed_errors(outcomes, root):
    assert [o.status for o in outcomes] == ["failed"], outcomes
    found, _ = attempts(root)
    assert [a.status for a in found] == ["failed"]
    return outcomes[0].error, (found[0].folder / "manifest.json").read_text()


def test_an_engine_core_killed_while_the_server_answers_on_fails_the_cell(fake_group, tmp_path):
    group, ctx = fake_group("FAKE_KILL_CORE_AFTER=3")  # the warm-up is request 1
    error, manifest = failed_errors(run_group(group, ctx), tmp_path / "store")
    assert error.startswith("engine died during the measured load: EngineCore (pid "), error
    assert "gone, API server (pid " in error and "still up; last lines of its log: " in error
    assert "fake: killing EngineCore" in error
    assert "engine died during the measured load: EngineCore" in manifest


def test_requests_the_server_rejects_fail_the_cell_with_its_reason(fake_group, tmp_path):
    group, ctx = fake_group("FAKE_STATUS=400", "FAKE_MESSAGE='temperature must be non-negative, got -1.0.'")
    error, manifest = failed_errors(run_group(group, ctx), tmp_path / "store")
    assert error == (
        "the server rejected 1 of 1 requests of the warm-up with HTTP 400 "
        "(a configuration error, not a measurement): temperature must be non-negative, got -1.0."
    )
    assert "not a measurement" in manifest


def test_server_errors_from_a_whole_engine_fail_the_cell(fake_group, tmp_path):
    group, ctx = fake_group("FAKE_STATUS=500", "FAKE_MESSAGE=boom")
    error, _ = failed_errors(run_group(group, ctx), tmp_path / "store")
    assert error == "the server answered HTTP 500 to 1 of 1 requests of the warm-up: boom"


def test_a_failed_reset_between_cells_relaunches_the_engine_and_the_cell_says_so(fake_group, tmp_path):
    """fake_vllm serves no /collective_rpc, so the reset before the second suffix cell fails: the engine is
    relaunched (its log continued), the cell says the reset failed, and the relaunch's start is the
    second cell's share alone."""
    corpora = tmp_path / "data" / "corpora"
    rows = [{"id": f"c{i}", "prompt": f"question {i}"} for i in range(12)]
    (corpora / "chat_bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    levers = (
        "grid.levers=[suffix]",
        "grid.corpora=[code_complete,chat_bench]",
        "grid.engine_reuse=per_spec",
        "grid.num_prompts.chat_bench=6",
    )
    group, ctx = fake_group(extra=levers)
    assert len(group.cells) == 2
    outcomes = run_group(group, ctx)
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    found, _ = attempts(tmp_path / "store")
    rows = {}
    for attempt in found:
        summary = pd.read_parquet(attempt.folder / "summary.parquet").iloc[0]
        rows[int(summary["engine_cell_index"])] = summary
    assert pd.isna(rows[0]["engine_reset"]) and rows[1]["engine_reset"] == False  # noqa: E712
    assert "HTTP 404" in rows[1]["engine_reset_problem"]
    assert rows[1]["suffix_cache_fresh"]  # a fresh engine: nothing served before it
    assert rows[0]["engine_launch_id"] == rows[1]["engine_launch_id"]  # one log, continued
    log = next((tmp_path / "store" / "logs").rglob("*.log")).read_text()
    assert log.count("$ ") == 2  # two launches in it
    # Each launch's start is shared by the cells it served: all of the relaunch's by the second cell.
    assert rows[0]["engine_start_share_s"] == pytest.approx(outcomes[0].engine_ready_s / 2, rel=1e-6)
    assert rows[1]["engine_start_share_s"] == pytest.approx(outcomes[1].engine_ready_s, rel=1e-6)

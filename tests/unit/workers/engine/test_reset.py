"""workers/engine/reset.py without an engine: what counts as a reset to fresh, and a cell's columns."""

from __future__ import annotations

import json
from pathlib import Path

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.engine.args import DEV_MODE_ENV, RESET_EXTENSION, Endpoint, serve_argv, serve_env
from workers.engine.reset import ResetReport, reset_engine, worker_problem


def worker(after_cached: int = 0, runner_requests: int = 0, reset: bool = True) -> dict:
    cache = {"cached_requests": after_cached, "active_requests": 0, "global_tree_seqs": after_cached}
    return {
        "reset": reset,
        "error": None if reset else "requests in flight",
        "before": {"runner_requests": 0, "suffix_cache": {"cached_requests": 7, "global_tree_seqs": 7}},
        "after": {"runner_requests": runner_requests, "suffix_cache": cache},
    }


def test_an_emptied_cache_on_every_worker_is_fresh():
    assert worker_problem([worker(), worker()]) is None
    report = ResetReport(problem=None, workers=[worker(), worker()], prefix_cache_reset=True)
    columns = report.columns()
    assert columns["engine_reset"] is True
    assert json.loads(columns["engine_reset_found_json"]) == {"cached_requests": 14, "global_tree_seqs": 14}
    assert json.loads(columns["engine_reset_left_json"])["cached_requests"] == 0


def test_state_left_or_a_refusing_worker_is_a_failed_reset():
    assert "left state" in worker_problem([worker(), worker(after_cached=1)])
    assert "left state" in worker_problem([worker(runner_requests=2)])
    assert "did not reset: requests in flight" in worker_problem([worker(reset=False)])
    assert worker_problem([]) == "no worker answered lever_reset_drafter"


def test_no_reset_gives_the_same_columns_empty():
    assert set(ResetReport.empty_columns()) == set(ResetReport(problem=None).columns())
    assert all(v is None for v in ResetReport.empty_columns().values())


def test_drafting_levers_load_the_extension_and_dev_mode_others_do_not():
    groups = group_by_engine(expand(to_config(compose_config(["experiment=smoke"]))))
    endpoint = Endpoint("127.0.0.1", 8123, "secret")
    for group in groups:
        argv = serve_argv(group.spec, endpoint, Path("/m"))
        env = serve_env(group.spec, {}, Path("/c"))
        drafts = group.spec.lever.spec_method == "suffix"
        assert (RESET_EXTENSION in argv) == drafts, group.spec.lever.name
        assert (env.get(DEV_MODE_ENV) == "1") == drafts, group.spec.lever.name


def test_a_reset_asks_for_the_cells_hook_and_fails_when_another_is_left_active(monkeypatch):
    """Shared launches (lever_plugins/switch.py): the hook travels as vLLM's string args."""
    sent = []

    def answer(active):
        def post(base_url, path, api_key, body, timeout_s):
            sent.append((path, body))
            if path == "/collective_rpc":
                done = worker()
                done["after"]["active_hook"] = active
                return {"results": [done]}
            return {"success": True}

        return post

    monkeypatch.setattr("workers.engine.reset.post", answer("kpad"))
    report = reset_engine("http://x", "k", hook="kpad")
    assert report.ok and report.active_hook == "kpad" and report.columns()["draft_hook"] == "kpad"
    assert sent[0] == (
        "/collective_rpc",
        {"method": "lever_reset_drafter", "timeout": 30.0, "args": ["kpad"]},
    )
    monkeypatch.setattr("workers.engine.reset.post", answer("suffix"))
    report = reset_engine("http://x", "k", hook="dynk")
    assert not report.ok and "runs draft hook 'suffix' after the reset, not 'dynk'" in report.problem
    sent.clear()
    monkeypatch.setattr("workers.engine.reset.post", answer("suffix"))
    assert reset_engine("http://x", "k").ok and "args" not in sent[0][1]  # a launch of one lever


def test_a_cells_hook_columns_are_its_own_hooks_counters_inside_the_window():
    from workers.engine.reset import hook_window_columns

    before = {
        "kpad": {"steps": 5, "drafts": 10, "draft_tokens": 80, "padded_tokens": 30},
        "dynk": {"steps": 9},
    }
    after = {
        "kpad": {"steps": 8, "drafts": 16, "draft_tokens": 128, "padded_tokens": 54},
        "dynk": {"steps": 9},
    }
    columns = hook_window_columns("kpad", before, after)
    assert columns["hook_drafts"] == 6 and columns["hook_draft_tokens"] == 48
    assert columns["hook_padded_share"] == 24 / 48
    assert hook_window_columns("dynk", before, after)["hook_steps"] == 0
    # No plugin hook, or a read that failed: every column None, never 0.
    for hook, b, a in ((None, before, after), ("kpad", None, after), ("kpad", before, None)):
        assert all(v is None for v in hook_window_columns(hook, b, a).values())

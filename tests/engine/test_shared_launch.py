"""grid.engine_reuse=shared on the real CPU engine (issue 29 items 2 and 4).

suffix, bestkpad and dynk at K=12 share one argv: two launches (two repeats),
each running one block of the three levers on code_complete, the engine reset
and the draft hook switched before every cell. What the store must show: one
launch per repeat, each cell's hook, kpad's drafts padded to exactly K only in
the bestkpad cells, and dynk's per-K counts only in the dynk cells.

The two launches run at once (ray.cpus_per_engine=1 lets the 2-CPU local
cluster hold both): they are also the test that two real engines on one node
take no port of each other's, vLLM's internal ones included (this was a run of
its own, van and van_noasync, two more launches).
"""

from __future__ import annotations

import json
import re
import time
import warnings

import pytest

from store.read import connect
from tests.closing import measured_none_failed
from tests.engine.conftest import describe, engine_processes
from tests.engine.test_grid_run import run_small

K = 12
HOOKS = {"suffix": "suffix", "bestkpad": "kpad", "dynk": "dynk"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory, local_ray):
    root = tmp_path_factory.mktemp("shared")
    code, output = run_small(
        root,
        "session_id=shared",
        "grid.levers=[suffix,bestkpad,dynk]",
        f"+grid.ks.suffix=[{K}]",
        f"+grid.ks.bestkpad=[{K}]",
        "grid.corpora=[code_complete]",
        "grid.repeats=2",
        "grid.engine_reuse=shared",
        "ray.cpus_per_engine=1",
        # Half run_small's load and no logprob probe (no van here, so no verdict to feed): the two
        # engines share the one core vLLM binds them to, and a cell at 12 prompts took 40-60 s of
        # this test's 224 s (2026-12-05); 6 prompts at concurrency 4 still batch and draft.
        "load.num_prompts=6",
        "gates.equivalence.probe_prompts=0",
    )
    cells = connect(root).execute("select * from cells").df()
    # The engine logs, read as soon as run() returned (the launches' ports and spans).
    logs = [log.read_text(errors="replace") for log in sorted((root / "logs").rglob("*.log"))]
    # An engine process was seen alive right after run() returned on 2026-12-03 (2-core machine; the
    # cause is not found yet and did not show in the runs since): say what it is, as a warning in the
    # test report; test_no_engine_process_is_left waits for the teardown a little before calling it a leak.
    if early := engine_processes():
        warnings.warn(f"engine processes alive right after run() returned:\n{describe(early)}", stacklevel=1)
    return code, output, cells, logs


def test_the_run_succeeds_on_two_launches_of_three_cells(shared):
    code, output, cells, _ = shared
    assert code == 0, output
    assert measured_none_failed(output, 6), output[-3000:]
    per_launch = cells.groupby("engine_launch_id")["lever"].apply(sorted)
    assert len(per_launch) == 2
    assert all(levers == ["bestkpad", "dynk", "suffix"] for levers in per_launch), per_launch
    # One launch per repeat; the block is the launch's only one, in ABBA order across blocks.
    assert cells.groupby("engine_launch_id")["repeat"].nunique().eq(1).all()
    assert (cells["block"] == 0).all() and cells["engine_shared"].all()


def test_each_cell_ran_its_own_hook_after_a_reset_to_fresh(shared):
    _, _, cells, _ = shared
    for row in cells.itertuples():
        assert row.draft_hook == HOOKS[row.lever], row.lever
        assert row.engine_reset is True and row.engine_reset_problem is None
        assert json.loads(row.engine_reset_left_json) == {
            "active_requests": 0, "cached_requests": 0, "global_tree_seqs": 0, "runner_requests": 0,
        }  # fmt: skip
        assert row.suffix_cache_fresh is True


def test_only_kpad_pads_to_k_and_only_dynk_counts_its_k_steps(shared):
    _, _, cells, _ = shared
    by_lever = {lever: group for lever, group in cells.groupby("lever")}
    assert (by_lever["bestkpad"]["draft_tokens_per_draft"] == K).all()
    assert (by_lever["suffix"]["draft_tokens_per_draft"] < K).all()
    assert by_lever["dynk"]["dynk_steps_by_k_json"].notna().all()
    assert by_lever["suffix"]["dynk_steps_by_k_json"].isna().all()
    assert by_lever["bestkpad"]["dynk_steps_by_k_json"].isna().all()
    for raw in by_lever["dynk"]["dynk_steps_by_k_json"]:
        assert sum(json.loads(raw).values()) > 0


def test_each_plugin_cell_records_its_own_hooks_counters_for_its_window(shared):
    """Read through the reset extension before and after the measured load (workers/engine/reset.py)."""
    _, _, cells, _ = shared
    by_lever = {lever: group for lever, group in cells.groupby("lever")}
    kpad = by_lever["bestkpad"]
    assert (kpad["hook_drafts"] > 0).all()
    assert (kpad["hook_draft_tokens"] == K * kpad["hook_drafts"]).all()  # every draft padded to K
    assert kpad["hook_padded_share"].between(0, 1, inclusive="neither").all()
    assert (by_lever["dynk"]["hook_steps"] > 0).all() and (by_lever["dynk"]["hook_drafts"] > 0).all()
    assert by_lever["suffix"]["hook_drafts"].isna().all()
    for row in cells[cells["lever"] != "suffix"].itertuples():
        print(
            f"{row.lever} r{row.repeat}: hook {row.hook_drafts} drafts / {row.hook_draft_tokens} tokens, "
            f"vLLM {row.srv_spec_draft_tokens} draft tokens; padded share {row.hook_padded_share:.3f}"
        )


STAMP = re.compile(r"\) (?:INFO|WARNING|ERROR) (\d\d-\d\d \d\d:\d\d:\d\d)")


def log_span(text: str) -> tuple[str, str]:
    """First and last vLLM log timestamps (MM-DD HH:MM:SS sorts as text within a year)."""
    stamps = STAMP.findall(text)
    return stamps[0], stamps[-1]


def test_two_real_engines_run_side_by_side_on_ports_of_their_own(shared):
    _, _, _, logs = shared
    assert len(logs) == 2
    assert not any("Address already in use" in text for text in logs)
    ports = [text.split("--port ", 1)[1].split()[0] for text in logs]
    assert ports[0] != ports[1]
    # Both engines were up at once (each started before the other stopped), so
    # their ports, vLLM's internal ones included, were held at the same time.
    first, second = (log_span(text) for text in logs)
    assert first[0] < second[1] and second[0] < first[1], (first, second)


def test_no_engine_process_is_left(shared):
    deadline = time.monotonic() + 20
    while engine_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not (left := engine_processes()), describe(left)

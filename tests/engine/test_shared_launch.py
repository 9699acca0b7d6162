"""grid.engine_reuse=shared on the real CPU engine (issue 29 items 2 and 4).

suffix, bestkpad and dynk at K=12 share one argv: two launches (two repeats),
each running one block of the three levers on code_complete, the engine reset
and the draft hook switched before every cell. What the store must show: one
launch per repeat, each cell's hook, kpad's drafts padded to exactly K only in
the bestkpad cells, and dynk's per-K counts only in the dynk cells.
"""

from __future__ import annotations

import json

import pytest

from store.read import connect
from tests.engine.conftest import describe, engine_processes
from tests.engine.test_grid_run import run_small

K = 12
HOOKS = {"suffix": "suffix", "bestkpad": "kpad", "dynk": "dynk"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
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
    )
    cells = connect(root).execute("select * from cells").df()
    return code, output, cells


def test_the_run_succeeds_on_two_launches_of_three_cells(shared):
    code, output, cells = shared
    assert code == 0, output
    assert "done 6, failed 0" in output
    per_launch = cells.groupby("engine_launch_id")["lever"].apply(sorted)
    assert len(per_launch) == 2
    assert all(levers == ["bestkpad", "dynk", "suffix"] for levers in per_launch), per_launch
    # One launch per repeat; the block is the launch's only one, in ABBA order across blocks.
    assert cells.groupby("engine_launch_id")["repeat"].nunique().eq(1).all()
    assert (cells["block"] == 0).all() and cells["engine_shared"].all()


def test_each_cell_ran_its_own_hook_after_a_reset_to_fresh(shared):
    _, _, cells = shared
    for row in cells.itertuples():
        assert row.draft_hook == HOOKS[row.lever], row.lever
        assert row.engine_reset is True and row.engine_reset_problem is None
        assert json.loads(row.engine_reset_left_json) == {
            "active_requests": 0, "cached_requests": 0, "global_tree_seqs": 0, "runner_requests": 0,
        }  # fmt: skip
        assert row.suffix_cache_fresh is True


def test_only_kpad_pads_to_k_and_only_dynk_counts_its_k_steps(shared):
    _, _, cells = shared
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
    _, _, cells = shared
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


def test_no_engine_process_is_left(shared):
    assert not (left := engine_processes()), describe(left)

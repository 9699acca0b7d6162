"""The crosscheck's lever mode (benchmarks/crosscheck_levers.py): its plan and its ratios, no engine."""

import math

import pytest

from benchmarks import drive_vllm_bench
from benchmarks.crosscheck_levers import (
    client_vs_bench,
    launch_order,
    lever_overrides,
    lever_ratio,
    next_launch_fits,
    prompt_slices,
    ratio_of_ratios,
    slots,
    summary,
)
from workers.load.prompts import Prompt


def test_launches_alternate_abba_and_a_later_call_goes_on():
    assert launch_order(["suffix", "bestkpad"], 2) == [
        ("suffix", 1),
        ("bestkpad", 1),
        ("bestkpad", 2),
        ("suffix", 2),
    ]
    assert launch_order(["suffix", "bestkpad"], 1, first=2) == [("bestkpad", 2), ("suffix", 2)]


def test_two_launches_give_each_client_every_slice_once_and_a_pair_never_shares_a_slice():
    runs = slots("suffix", 1, 2) + slots("suffix", 2, 2)
    for client in ("harness", "bench"):
        assert sorted(s.slice_index for s in runs if s.client == client) == [0, 1, 2, 3]
    for launch in (1, 2):
        for pair in (1, 2):
            both = [s.slice_index for s in runs if (s.launch, s.pair) == (launch, pair)]
            assert len(set(both)) == 2
    # Who goes first alternates from pair to pair.
    firsts = [slots("suffix", 1, 2)[i].client for i in (0, 2)]
    assert firsts[0] != firsts[1]


def test_slices_are_disjoint_from_each_other_and_from_the_warmup():
    prompts = [Prompt(str(i), prompt=f"p{i}") for i in range(20)]
    warmup, slices = prompt_slices(prompts, 4, 3, 4)
    seen = [p.prompt_id for p in warmup] + [p.prompt_id for s in slices for p in s]
    assert len(seen) == len(set(seen)) == 16
    with pytest.raises(SystemExit, match="17 needed"):
        prompt_slices(prompts[:16], 5, 3, 4)


def test_lever_overrides_replace_the_lever_and_set_k_only_where_there_is_one():
    base = ["experiment=smoke", "grid.levers=[van]", "load.max_tokens=48"]
    assert lever_overrides(base, "bestkpad", 8) == [
        "experiment=smoke",
        "load.max_tokens=48",
        "grid.levers=[bestkpad]",
        "+grid.ks.bestkpad=[8]",
    ]
    assert lever_overrides(base, "van", 8)[-1] == "grid.levers=[van]"


def fake_runs(harness_gain: float, bench_gain: float) -> list[dict]:
    """Both levers over 2 launches x 2 pairs; `other` is faster by the given factor per client."""
    rows = []
    for lever, launch in launch_order(["a", "b"], 2):
        for s in slots(lever, launch, 2):
            base = 100.0 * (1 + 0.1 * s.slice_index)  # slices differ in speed; pairing takes that out
            gain = (harness_gain if s.client == "harness" else bench_gain) if lever == "b" else 1.0
            wobble = 1 + 0.01 * ((launch + s.pair + s.slice_index * (lever == "b")) % 3) - 0.01
            tok_s = base * gain * wobble
            rows.append({"lever": lever, "launch": launch, "pair": s.pair, "client": s.client,
                         "slice": s.slice_index, "tok_s": tok_s,
                         "window_tok_s": tok_s * 1.05 if s.client == "harness" else None})  # fmt: skip
    return rows


def test_lever_ratio_is_paired_by_slice_for_each_client():
    runs = fake_runs(1.4, 1.4)
    for figure in ("harness", "bench", "window"):
        r = lever_ratio(runs, "a", "b", figure)
        assert r["n"] == 4
        assert r["lo"] < 1.4 < r["hi"]
        assert r["ratio"] == pytest.approx(1.4, rel=0.02)


def test_ratio_of_ratios_tells_a_client_that_reads_another_lever_ratio():
    same = ratio_of_ratios(fake_runs(1.4, 1.4), "a", "b", "harness")
    assert same["lo"] <= 1.0 <= same["hi"]
    # The H200 record's case: 1.56 by one figure against 1.40 by vllm bench serve.
    apart = ratio_of_ratios(fake_runs(1.56, 1.40), "a", "b", "harness")
    assert apart["ratio"] == pytest.approx(1.56 / 1.40, rel=0.02)
    assert apart["lo"] > 1.0


def test_summary_reads_harness_over_bench_per_lever():
    s = summary(fake_runs(1.4, 1.4), ["a", "b"])
    assert s["per_lever"]["a"]["harness_over_bench"]["n"] == 4
    # The harness's and the bench's slices differ within a pair: the ratio carries slice speed.
    assert math.isfinite(s["per_lever"]["b"]["harness_over_bench"]["ratio"])
    assert s["per_lever"]["a"]["window_mean"] > s["per_lever"]["a"]["harness_mean"]


def test_budget_counts_a_warm_start_plus_the_last_launchs_runs():
    assert next_launch_fits(300, None, 1e9, 90)
    assert next_launch_fits(275, 490, 75, 90)
    assert not next_launch_fits(350, 490, 75, 90)


def test_bench_is_sent_ignore_eos_only_where_the_load_is():
    # A load that stops at EOS has a drain of a few long requests that one forced to max_tokens lacks;
    # the bench run compared with it must stop at EOS too.
    assert "--ignore-eos" in drive_vllm_bench.command("http://h", "tok", 8, 4, [])
    assert "--ignore-eos" not in drive_vllm_bench.command("http://h", "tok", 8, 4, [], ignore_eos=False)


def test_per_step_ratio_takes_out_the_engine_stepping_faster_in_one_run():
    # The bench's run found the engine stepping 20% faster: 20% more tok/s, same tokens per step.
    runs = [
        {"lever": "a", "launch": 1, "pair": 1, "client": "harness", "slice": 0, "tok_s": 10.0,
         "window_tok_s": 11.0, "mean_itl_ms": 12.0},
        {"lever": "a", "launch": 1, "pair": 1, "client": "bench", "slice": 1, "tok_s": 12.0,
         "window_tok_s": None, "mean_itl_ms": 10.0},
    ]  # fmt: skip
    assert client_vs_bench(runs, "a", "harness")["ratio"] == pytest.approx(10 / 12)
    assert client_vs_bench(runs, "a", "per_step")["ratio"] == pytest.approx(1.0)
    assert client_vs_bench(runs, None, "window")["ratio"] == pytest.approx(11 / 12)

"""Variance components of benchmarks/launch_noise.py on synthetic records with known terms; no engine."""

import dataclasses
import math
import os
import random
import statistics

import pytest

from benchmarks import launch_noise as ln
from vocab.schema import LoadSpec
from workers.load.client import warmup_load


def balanced(launch_effects, block_offsets, mu=6.907755278982137):
    """ln values mu + a_i + d_j: launch i's blocks are its effect plus the same zero-mean offsets."""
    return [[mu + a + d for d in block_offsets] for a in launch_effects]


def test_components_recover_known_launch_and_block_terms():
    # 3 launches (effects -0.1, 0, 0.1: variance 0.01), 2 blocks at +-0.05 around each launch mean.
    # MSW = 3 * 2 * 0.05^2 / 3 = 0.005; MSB = 2 * 0.01 = 0.02; launch variance = (0.02 - 0.005) / 2.
    c = ln.components(balanced([-0.1, 0.0, 0.1], [-0.05, 0.05]))
    assert c["sd_block"] == pytest.approx(math.sqrt(0.005))
    assert c["sd_launch"] == pytest.approx(math.sqrt(0.0075))
    assert c["sd_launch_means"] == pytest.approx(0.1)
    assert (c["launches"], c["runs"], c["df_launch"], c["df_block"]) == (3, 6, 2, 3)
    assert c["geo_mean"] == pytest.approx(1000.0)


def test_launch_and_block_are_not_confused():
    # Big launch effects, tiny blocks: a swap would report sd_launch ~0.007 and sd_block ~0.2.
    c = ln.components(balanced([-0.2, 0.2, 0.0, 0.1], [-0.005, 0.005]))
    assert c["sd_launch"] > 0.1 > 0.01 > c["sd_block"]
    # And the other way round: launches alike, blocks far apart -> the launch term clips at 0.
    c = ln.components(balanced([0.0, 0.001, -0.001], [-0.2, 0.2]))
    assert c["sd_launch"] == 0.0
    assert c["sd_block"] == pytest.approx(math.sqrt(2 * 0.2**2))


def test_components_unequal_blocks_use_n0():
    groups = [[0.0, 0.2], [1.0, 1.2, 1.1], [0.5]]
    c = ln.components(groups)
    n, means = [2, 3, 1], [0.1, 1.1, 0.5]
    grand = statistics.fmean([y for g in groups for y in g])
    msw = (2 * 0.1**2 + 2 * 0.1**2) / (6 - 3)
    msb = sum(k * (m - grand) ** 2 for k, m in zip(n, means, strict=True)) / 2
    n0 = (6 - sum(k * k for k in n) / 6) / 2
    assert c["sd_block"] == pytest.approx(math.sqrt(msw))
    assert c["sd_launch"] == pytest.approx(math.sqrt((msb - msw) / n0))


def test_components_recover_simulated_terms():
    rng = random.Random(44)
    groups = [[a + rng.gauss(0, 0.03) for _ in range(3)] for a in (rng.gauss(0, 0.10) for _ in range(3000))]
    c = ln.components(groups)
    assert c["sd_launch"] == pytest.approx(0.10, rel=0.06)
    assert c["sd_block"] == pytest.approx(0.03, rel=0.04)


def test_components_of_one_launch_or_one_block_each():
    assert ln.components([[1.0, 1.1]])["sd_launch"] is None
    single = ln.components([[1.0], [1.1]])
    assert single["sd_block"] is None and single["df_block"] == 0
    assert single["sd_launch_means"] == pytest.approx(statistics.stdev([1.0, 1.1]))


def run(lever, launch, client, tok_s, window=None, setting="base", source=0):
    return {"lever": lever, "launch": launch, "client": client, "tok_s": tok_s,
            "window_tok_s": window, "setting": setting, "source": source}  # fmt: skip


def test_summary_reads_each_client_by_launch():
    runs = []
    for launch, a in ((1, 1.0), (2, 1.2), (3, 0.9)):
        for _block, d in ((1, 0.98), (2, 1.02)):
            runs.append(run("van", launch, "harness", 100 * a * d, window=90 * a * d))
            runs.append(run("van", launch, "bench", 100 * a * d * 1.01))
    rows = {r["reader"]: r for r in ln.summary(runs)}
    assert set(rows) == {"harness", "bench", "window"}
    for reader in rows.values():
        assert reader["launches"] == 3 and reader["runs"] == 6
    assert rows["bench"]["sd_launch"] == pytest.approx(rows["harness"]["sd_launch"])
    assert rows["window"]["geo_mean"] < rows["harness"]["geo_mean"]


def test_pooled_files_keep_their_launches_apart():
    # Launch 1 of two files: pooled as one launch, the two files' spread would vanish into the block term.
    runs = [
        run("van", 1, "bench", v, source=s) for s, vals in ((0, (100, 101)), (1, (120, 121))) for v in vals
    ]
    (row,) = ln.summary(runs)
    assert row["launches"] == 2 and row["sd_launch"] > 0.1


def test_resolve_setting():
    assert ln.resolve_setting("base") == ln.Setting()
    s = ln.resolve_setting("warmup2,pinned,tokthreads")
    assert (s.warmup_waves, s.pin, s.engine_env["RAYON_NUM_THREADS"]) == (2, "auto", "1")
    assert ln.resolve_setting("gcfreeze").engine_env == {"VLLM_GC_DEBUG": "1"}
    for bad in ("warmup3", "warmup1,warmup2"):
        with pytest.raises(SystemExit):
            ln.resolve_setting(bad)


def test_warmup_plan_is_full_length_waves():
    load = LoadSpec(concurrency=8, warmup_requests=5)
    assert ln.warmup_plan(ln.Setting(), load) == (5, load)
    n, warm = ln.warmup_plan(ln.resolve_setting("warmup2"), load)
    assert n == 16 and warm.ignore_eos and warm.concurrency == 8
    # The grid's own full-wave warm-up (load.warmup_ignore_eos=true, warmup_requests = 2 x concurrency)
    # sends the very same requests: what the records measured is what a user turns on.
    grid = dataclasses.replace(load, warmup_ignore_eos=True, warmup_requests=16)
    assert grid.warmup_requests == n and warmup_load(grid) == dataclasses.replace(warm, warmup_requests=16)
    assert ln.warmup_head(load) == 16


def test_cold_cache_env_and_gc_log(tmp_path):
    env = ln.engine_env({"VLLM_CACHE_ROOT": "/warm"}, ln.resolve_setting("coldcache"), tmp_path)
    assert {env[k] for k in ln.CACHE_ENV} <= {str(tmp_path / k.lower()) for k in ln.CACHE_ENV}
    assert ln.engine_env({"VLLM_CACHE_ROOT": "/warm"}, ln.Setting(), tmp_path)["VLLM_CACHE_ROOT"] == "/warm"
    log = tmp_path / "engine.log"
    log.write_text("x GC took 1.500ms to complete. Collected 3\ny GC took 0.5ms to complete.\n")
    assert ln.gc_pauses(log) == (2, 2.0)
    log.write_text("nothing\n")
    assert ln.gc_pauses(log) is None


def test_markdown_has_a_row_per_reader():
    runs = [run("van", i, c, 100.0 + i + j) for i in (1, 2) for j in (0, 1) for c in ("harness", "bench")]
    text = ln.markdown(ln.summary(runs), [])
    assert "| base | van | vllm bench serve | 2 | 4 |" in text


def test_settings_separated_by_semicolons_interleave_with_the_levers():
    from benchmarks.crosscheck_levers import launch_order
    from benchmarks.launch_noise import arm_table, resolve_settings

    settings = resolve_settings("base;pinned,warmup2")
    assert [x.names for x in settings] == [("base",), ("pinned", "warmup2")]
    arms = arm_table(["suffix", "bestkpad"], settings)
    order = launch_order(list(arms), 2)
    # Every lever under every setting once per launch number, in ABBA order over the four arms.
    assert sorted(order[:4]) == sorted((a, 1) for a in arms) and order[4:] == [
        (a, 2) for a in reversed(list(arms))
    ]
    assert arms["bestkpad@pinned,warmup2"][1].warmup_waves == 2 and arms["suffix@base"][1].pin == "off"
    with pytest.raises(SystemExit, match="tokthreads"):
        resolve_settings("base;tokthreads")


def test_the_same_slice_launch_sd_compares_a_slice_with_itself_across_launches():
    from benchmarks.launch_noise import same_slice_launch_sd

    # Slice 0 holds short outputs (half the rate); each launch's own offset is what moves a slice.
    offsets = {1: 1.0, 2: 1.1, 3: 0.9}
    runs = [
        {
            "lever": "bestkpad",
            "launch": n,
            "client": "bench",
            "slice": s,
            "tok_s": (500.0 if s == 0 else 1000.0) * o,
        }
        for n, o in offsets.items()
        for s in (0, 1)
    ]
    sd, df = same_slice_launch_sd(runs, "bestkpad", "bench")
    logs = [math.log(o) for o in offsets.values()]
    assert df == 4 and sd == pytest.approx(statistics.stdev(logs))  # the slices' content is not in it
    assert same_slice_launch_sd(runs, "bestkpad", "harness") == (None, 0)


def test_a_setting_s_level_is_read_on_runs_paired_by_client_slice_and_launch():
    # Slices differ 2x in content and launches by their own offsets; the second setting runs every pair
    # 1.3x faster (up to +-2 % of noise). Paired, the ratio is the setting's alone; a run without a partner
    # (slice 9, only under one setting) is left out, and one setting alone gives no level.
    rng = random.Random(7)
    offsets = {1: 1.0, 2: 1.15, 3: 0.85}
    runs = [
        {
            "lever": "suffix",
            "launch": n,
            "client": client,
            "slice": s,
            "setting": setting,
            "tok_s": (500.0 if s == 0 else 1000.0)
            * o
            * (1.3 if setting == "pinned" else 1.0)
            * math.exp(rng.uniform(-0.02, 0.02)),
            "window_tok_s": None,
        }
        for n, o in offsets.items()
        for setting in ("base", "pinned")
        for client, s in (("harness", 0), ("bench", 1))
    ]
    runs.append({"lever": "suffix", "launch": 1, "client": "bench", "slice": 9, "setting": "pinned",
                 "tok_s": 99_999.0, "window_tok_s": None})  # fmt: skip
    levels = {x["reader"]: x for x in ln.level_ratios(runs)}
    assert set(levels) == {"harness", "bench"}  # no window figures: no row
    for x in levels.values():
        assert x["pairs"] == 3 and (x["setting"], x["over"]) == ("pinned", "base")
        assert x["ratio"] == pytest.approx(1.3, rel=0.03) and 1.0 < x["lo"] < 1.3 < x["hi"]
    assert ln.level_ratios([r for r in runs if r["setting"] == "base"]) == []
    table = ln.markdown([], [], ln.level_ratios(runs))
    assert f"| suffix | pinned | base | vllm bench serve | 3 | {levels['bench']['ratio']:.3f} | [" in table


def test_pooled_calls_that_reuse_launch_numbers_pair_nothing_by_guess():
    # Two calls that both began at launch 1 under one setting: (client, slice, launch) no longer names one
    # run, so those pairs are left out; a launch number only one call ran still pairs.
    def one(launch, setting, tok_s, source):
        return {"lever": "suffix", "launch": launch, "client": "bench", "slice": 1, "setting": setting,
                "tok_s": tok_s, "window_tok_s": None, "source": source}  # fmt: skip

    runs = [one(1, "base", 100.0, 0), one(1, "pinned", 130.0, 0), one(1, "pinned", 900.0, 1)]
    runs += [one(n, s, t, 0) for n in (2, 3) for s, t in (("base", 100.0), ("pinned", 120.0 + n))]
    (bench,) = [x for x in ln.level_ratios(runs) if x["reader"] == "bench"]
    assert bench["pairs"] == 2 and 1.2 < bench["ratio"] < 1.25


def test_host_reading_and_launch_host_tell_a_host_slowdown_apart():
    # /proc/stat's cpu lines: user, nice, system, idle, iowait, irq, softirq, steal.
    before = {"cpu": [100, 0, 0, 900, 0, 0, 0, 0], "cpu0": [50, 0, 0, 450, 0, 0, 0, 0]}
    after = {"cpu": [300, 0, 0, 1500, 0, 0, 0, 200], "cpu0": [150, 0, 0, 750, 0, 0, 0, 100]}
    # Deltas: 200 user, 600 idle, 200 steal of 1,000 ticks.
    assert ln.host_reading(before, after) == {"steal_share": 0.2, "busy_share": 0.4}
    core = {"engine_core": {"cpu_ms_per_ktok": 40.0, "wait_share": 0.02, "nivcsw_per_s": 3.0}}
    rows = [
        {
            "mean_itl_ms": 2.0,
            "host": {
                "steal_share": 0.01,
                "cpu_mhz_before": 2000.0,
                "cpu_mhz_after": 2200.0,
                "probe_ms": 10.0,
            },
            "engine_threads": core,
        },
        {
            "mean_itl_ms": 3.0,
            "host": {"steal_share": 0.2, "cpu_mhz_before": None, "cpu_mhz_after": 2400.0, "probe_ms": 12.0},
            "engine_threads": {"engine_core": {"cpu_ms_per_ktok": 60.0, "wait_share": 0.04}},
        },
        {"mean_itl_ms": None},  # a block without the reading (older records) is left out, not zero
    ]
    assert ln.launch_host(rows) == {"mean_itl_ms": 2.5, "steal_share_max": 0.2, "cpu_mhz": 2200.0,
                                    "probe_ms": 11.0, "core_cpu_ms_per_ktok": 50.0,
                                    "core_wait_share": pytest.approx(0.03)}  # fmt: skip
    assert set(ln.launch_host([]).values()) == {None}
    launch = {"setting": "base", "lever": "van", "launch": 1, "ready_s": 50.0, "cache_bytes_before": {},
              "gc_pauses": None, "gc_pause_ms": None, "placement": {"engine_cpus": None, "note": "off"},
              **ln.launch_host(rows[:2])}  # fmt: skip
    assert "| off | 2.500 | 20.00 | 2,200 | 11.00 | 50.0 | 3.0 |" in ln.markdown([], [launch])
    old = {k: v for k, v in launch.items() if k not in ln.launch_host([])}
    assert "| off | - | - | - | - | - | - |" in ln.markdown([], [old])


def test_engine_usage_is_cpu_per_token_and_core_wait_per_role():
    ms = 1_000_000
    before = {"EngineCore": {1: ln.ThreadCounters(100 * ms, 0, 0, 0)}, "API server": {}}
    after = {
        # The EngineCore's thread ran 200 ms more and waited 50 ms; a thread born in the block counts whole.
        "EngineCore": {1: ln.ThreadCounters(300 * ms, 50 * ms, 5, 8), 2: ln.ThreadCounters(50 * ms, 0, 0, 2)},
        "API server": {7: ln.ThreadCounters(80 * ms, 20 * ms, 0, 0)},
    }
    used = ln.engine_usage(before, after, wall_s=2.0, output_tokens=5_000)
    assert used["EngineCore"] == {"cpu_ms_per_ktok": 50.0, "wait_share": 0.1667, "nivcsw_per_s": 5.0}
    assert used["API server"]["cpu_ms_per_ktok"] == 16.0
    assert ln.engine_usage(before, after, 2.0, 0)["EngineCore"]["cpu_ms_per_ktok"] is None


def test_host_probe_runs_on_the_cores_asked_and_gives_this_thread_its_cores_back(monkeypatch):
    mine = os.sched_getaffinity(0)
    seen = []
    real = ln.probe_loop

    def watched(n: int) -> int:
        seen.append(os.sched_getaffinity(0))
        return real(n)

    monkeypatch.setattr(ln, "probe_loop", watched)
    one = min(mine)
    assert ln.host_probe_ms([one], loops=1_000, repeats=3) > 0
    assert seen == [{one}] * 3 and os.sched_getaffinity(0) == mine

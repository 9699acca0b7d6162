import json

import pandas as pd

from analysis.verdicts import write_verdicts
from store.layout import StoreLayout
from store.read import connect
from store.writer import write_ok_attempt
from vocab.schema import EquivalenceConfig
from workers.load.client import RequestRecord
from workers.load.probe import ProbeRow

VAN = ["def f():\n    return 1", "x = 2", "print('hi')", "for i in range(3): pass"]
# These stores hold 4 prompts; the paired gate's minimum is lowered to match, and its margin
# widened so that 4 identical outputs can pass (their upper bound is z^2 / (4 + z^2) = 0.40).
FEW = EquivalenceConfig(min_prompts=4, noninferiority_margin=0.5)


def put(
    layout,
    key,
    lever,
    outputs,
    *,
    k=0,
    anchor=None,
    replicate=None,
    prompt_seed=None,
    temperature=0.0,
    num_prompts=4,
    probe=(),
    quantized=False,
):
    load = {"num_prompts": num_prompts, "seed": 0, "temperature": temperature, "max_tokens": 64}
    records = [
        RequestRecord(i, f"p{i}", "measure", send_ns=i, end_ns=i + 1, output_text=text)
        for i, text in enumerate(outputs)
    ]
    summary = {"model": "tiny", "corpus": "code_complete", "lever": lever, "k": k, "repeat": 0}
    config = {"load": load, "lever": {"name": lever, "quantized": quantized}}
    summary.update(anchor=anchor, replicate=replicate, max_tokens=64, config_json=json.dumps(config))
    if prompt_seed is not None:
        summary["prompt_seed"] = prompt_seed
    tags = {"session_id": "s1", "cell_key": key, "attempt_id": f"s1-{key}"}
    write_ok_attempt(layout, tags, records, summary, probe)


def test_verdicts_against_van_with_its_anchor_as_the_noise_floor(tmp_path):
    layout = StoreLayout(tmp_path)
    put(layout, "van", "van", VAN)
    put(layout, "anchor", "van", VAN, anchor="start")
    put(layout, "suffix", "suffix", VAN, k=8)
    put(layout, "hot", "van", [*VAN[:2], "print('ho')", "while True: pass"], temperature=1.0)
    put(layout, "other-prompts", "suffix", VAN, k=8, num_prompts=8)  # different prompts: no reference
    frame = write_verdicts(tmp_path, "s1", FEW).set_index("cell_key")
    assert frame.loc["suffix", "verdict"] == "pass"
    assert frame.loc["suffix", "reference_cell_key"] == "van"  # the grid's cell, not the anchor
    assert frame.loc["suffix", "noise_floor_exact_match_rate"] == 1.0
    assert frame.loc["hot", "verdict"] == "fail"
    assert frame.loc["hot", "exact_match_rate"] == 0.5
    assert frame.loc["hot", "first_divergence_chars_median"] == 4.0
    assert frame.loc["other-prompts", "verdict"] == "no_reference"
    assert "anchor" not in frame.index and "van" not in frame.index
    stored = connect(tmp_path).execute("SELECT cell_key, verdict FROM equivalence").df()
    pd.testing.assert_frame_equal(
        stored.set_index("cell_key").sort_index(), frame[["verdict"]].sort_index(), check_names=False
    )


def test_an_empty_store_gives_no_verdicts_and_writes_nothing(tmp_path):
    assert write_verdicts(tmp_path, "s1", EquivalenceConfig()).empty
    assert not StoreLayout(tmp_path).equivalence_file("s1").exists()


def probe(top_logprobs):
    """Probe rows for prompt p0: one position per entry, tokens 1..k with these logprobs."""
    return [
        ProbeRow("p0", position, list(range(1, len(lps) + 1)), list(lps))
        for position, lps in enumerate(top_logprobs, start=1)
    ]


def test_quantised_levers_are_judged_on_the_probe_and_lossless_ones_report_it(tmp_path):
    layout = StoreLayout(tmp_path)
    van_probe = probe([[-0.2, -2.0], [-0.1, -3.0]])
    put(layout, "van", "van", VAN, probe=van_probe)
    put(layout, "anchor", "van", VAN, anchor="start", probe=van_probe)
    # Outputs differ from van's everywhere, as quantised weights' would; the distributions barely move.
    other = ["a", "b", "c", "d"]
    put(layout, "w4-close", "w4a4", other, quantized=True, probe=probe([[-0.25, -1.8], [-0.12, -2.9]]))
    put(layout, "w4-far", "w4a4x", other, quantized=True, probe=probe([[-3.0, -0.1], [-2.5, -0.2]]))
    put(layout, "w4-unprobed", "w4a4y", other, quantized=True)
    put(layout, "suffix", "suffix", VAN, k=8, probe=van_probe)
    frame = write_verdicts(tmp_path, "s1", FEW).set_index("cell_key")
    assert frame.loc["w4-close", "verdict"] == "pass"
    assert frame.loc["w4-close", "exact_match_rate"] == 0.0  # exact match would have failed it
    assert frame.loc["w4-close", "kl_nats"] < 0.01 and frame.loc["w4-close", "probe_positions"] == 2
    assert frame.loc["w4-far", "verdict"] == "fail" and frame.loc["w4-far", "topk_agreement"] == 1.0
    assert frame.loc["w4-far", "kl_nats"] > 0.1  # both tokens in each top 2, but the mass moved
    assert frame.loc["w4-unprobed", "verdict"] == "no_reference"
    assert "probe_prompts" in frame.loc["w4-unprobed", "reason"]
    assert frame.loc["suffix", "verdict"] == "pass" and frame.loc["suffix", "kl_nats"] == 0.0
    assert frame.loc["suffix", "noise_floor_kl_nats"] == 0.0
    stored = connect(tmp_path).execute("SELECT cell_key, kl_nats FROM equivalence ORDER BY cell_key").df()
    assert stored["kl_nats"].notna().sum() == 3


def bf16_runs(n=60, floor_changed=20, lever_changed=20, overlap=15):
    """van's outputs, a replicate differing on `floor_changed` prompts, a lever on `lever_changed`."""
    van = [f"answer {i}" for i in range(n)]
    floor = [f"other {i}" if i < floor_changed else t for i, t in enumerate(van)]
    start = floor_changed - overlap
    lever = [f"lever {i}" if start <= i < start + lever_changed else t for i, t in enumerate(van)]
    return van, floor, lever


def paired_store(tmp_path, van, floor, lever):
    layout = StoreLayout(tmp_path)
    n = len(van)
    put(layout, "van", "van", van, num_prompts=n)
    put(layout, "replicate", "van", floor, num_prompts=n, replicate=True)
    put(layout, "suffix", "suffix", lever, k=8, num_prompts=n)
    return write_verdicts(tmp_path, "s1", EquivalenceConfig()).set_index("cell_key").loc["suffix"]


def test_a_lever_as_noisy_as_van_itself_passes_on_gpus(tmp_path):
    # bf16: the replicate matches van on 40/60 only; the lever changes as many outputs, partly others.
    row = paired_store(tmp_path, *bf16_runs())
    assert row["verdict"] == "pass", row["reason"]
    assert row["floor_cell_key"] == "replicate" and row["n_prompts"] == 60
    assert row["discordant_against_lever"] == 5 and row["discordant_for_lever"] == 5
    assert row["excess_changed_share"] == 0.0 and row["excess_changed_share_upper"] < 0.11
    # 60 prompts, 20 changed by the replicate: the margin is widened past 10 points so that a lever
    # identical to van passes 95% of the time, and stored beside the bound.
    assert 0.25 < row["margin_applied"] < 0.35 and row["excess_changed_share_upper"] < row["margin_applied"]
    # The old unpaired rule needed 100% without a floor: it would have failed this lever.
    assert row["exact_match_rate"] < 1.0


def test_a_lever_that_changes_far_more_outputs_than_van_does_fails(tmp_path):
    row = paired_store(tmp_path, *bf16_runs(floor_changed=5, lever_changed=30, overlap=5))
    assert row["verdict"] == "fail", row["reason"]
    assert row["discordant_against_lever"] == 25 and row["mcnemar_p"] < 1e-6
    assert row["excess_changed_share_upper"] > row["excess_changed_share"] == 25 / 60
    assert row["lever_prefix_share_median"] < row["floor_prefix_share_median"]


def test_on_a_deterministic_engine_one_changed_output_fails(tmp_path):
    van = [f"answer {i}" for i in range(30)]
    lever = [*van[:-1], "changed"]
    row = paired_store(tmp_path, van, list(van), lever)
    assert row["verdict"] == "fail" and "deterministic" in row["reason"]


def test_too_few_prompts_is_no_evidence(tmp_path):
    van = [f"answer {i}" for i in range(10)]
    row = paired_store(tmp_path, van, list(van), list(van))
    assert row["verdict"] == "no_reference" and "needs >= 25" in row["reason"]


def test_repeats_are_judged_against_van_of_the_same_repeat(tmp_path):
    layout = StoreLayout(tmp_path)
    put(layout, "van-r0", "van", VAN)
    put(layout, "van-r1", "van", [t + "!" for t in VAN], prompt_seed=1)
    put(layout, "suffix-r1", "suffix", [t + "!" for t in VAN], k=8, prompt_seed=1)
    row = write_verdicts(tmp_path, "s1", FEW).set_index("cell_key").loc["suffix-r1"]
    assert row["reference_cell_key"] == "van-r1" and row["verdict"] == "pass", row["reason"]

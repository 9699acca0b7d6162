import json

import pandas as pd

from grid.schema import EquivalenceConfig
from grid.verdicts import write_verdicts
from store.layout import StoreLayout
from store.read import connect
from store.writer import write_ok_attempt
from workers.load import RequestRecord
from workers.probe import ProbeRow

VAN = ["def f():\n    return 1", "x = 2", "print('hi')", "for i in range(3): pass"]


def put(
    layout,
    key,
    lever,
    outputs,
    *,
    k=0,
    anchor=None,
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
    summary.update(anchor=anchor, max_tokens=64, config_json=json.dumps(config))
    tags = {"session_id": "s1", "cell_key": key, "attempt_id": f"s1-{key}"}
    write_ok_attempt(layout, tags, records, summary, probe)


def test_verdicts_against_van_with_its_anchor_as_the_noise_floor(tmp_path):
    layout = StoreLayout(tmp_path)
    put(layout, "van", "van", VAN)
    put(layout, "anchor", "van", VAN, anchor="start")
    put(layout, "suffix", "suffix", VAN, k=8)
    put(layout, "hot", "van", [*VAN[:2], "print('ho')", "while True: pass"], temperature=1.0)
    put(layout, "other-prompts", "suffix", VAN, k=8, num_prompts=8)  # different prompts: no reference
    frame = write_verdicts(tmp_path, "s1", EquivalenceConfig()).set_index("cell_key")
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
    frame = write_verdicts(tmp_path, "s1", EquivalenceConfig()).set_index("cell_key")
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

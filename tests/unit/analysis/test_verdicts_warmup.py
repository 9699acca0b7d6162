"""The gate judges the warm-up's outputs beside the measured ones (gates.equivalence.judge_warmup).

Every lever of a repeat warms up on the same prompts, apart from the measured ones, so their
greedy outputs are evidence the cell already paid for: at the study's load they take chat_bench's
gate from 46 prompts to 110 (issue 46 item 4). Old stores hold measured rows only and read as before.
"""

import json

from analysis.verdicts import write_verdicts
from store.layout import StoreLayout
from store.writer import write_ok_attempt
from vocab.schema import EquivalenceConfig
from workers.load.client import RequestRecord

MEASURED = 30
WARMUP = 6


def put(layout, key, lever, measured, warmup, *, k=0, replicate=None):
    load = {"num_prompts": MEASURED, "seed": 0, "temperature": 0.0, "max_tokens": 64}
    records = [
        RequestRecord(i, f"{prefix}{i}", phase, send_ns=i, end_ns=i + 1, output_text=text)
        for prefix, phase, texts in (("w", "warmup", warmup), ("p", "measure", measured))
        for i, text in enumerate(texts)
    ]
    summary = {"model": "tiny", "corpus": "code_complete", "lever": lever, "k": k, "repeat": 0}
    config = {"load": load, "lever": {"name": lever, "quantized": False}}
    summary.update(replicate=replicate, max_tokens=64, config_json=json.dumps(config))
    tags = {"session_id": "s1", "cell_key": key, "attempt_id": f"s1-{key}"}
    write_ok_attempt(layout, tags, records, summary)


def verdict(tmp_path, lever_warmup, cfg):
    """A deterministic floor (the replicate matches van everywhere): any changed output fails."""
    measured = [f"answer {i}" for i in range(MEASURED)]
    warmup = [f"warm {i}" for i in range(WARMUP)]
    layout = StoreLayout(tmp_path)
    put(layout, "van", "van", measured, warmup)
    put(layout, "replicate", "van", measured, warmup, replicate=True)
    put(layout, "suffix", "suffix", measured, lever_warmup, k=8)
    return write_verdicts(tmp_path, "s1", cfg).set_index("cell_key").loc["suffix"]


def test_a_lever_that_changed_a_warm_up_output_is_caught(tmp_path):
    changed = [f"warm {i}" if i != 3 else "changed" for i in range(WARMUP)]
    row = verdict(tmp_path, changed, EquivalenceConfig())
    assert row["n_prompts"] == MEASURED + WARMUP
    assert row["verdict"] == "fail" and "deterministic" in row["reason"], row["reason"]


def test_without_judge_warmup_only_the_measured_outputs_are_judged(tmp_path):
    changed = [f"warm {i}" if i != 3 else "changed" for i in range(WARMUP)]
    row = verdict(tmp_path, changed, EquivalenceConfig(judge_warmup=False))
    assert row["n_prompts"] == MEASURED
    assert row["verdict"] == "pass", row["reason"]

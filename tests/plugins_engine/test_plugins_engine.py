"""Evidence that the plugins run inside vLLM and preserve output (CPU engine, SmolLM2, float32).

(a) kpad is loaded and active: the server's counters show draft tokens = K x drafts;
(b) greedy outputs with kpad equal those of plain vLLM (van), token for token;
(c) dynk runs, logs its per-K decisions, and also preserves output.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.plugins_engine.serve import complete, counters, running_engine, wait_for_log
from workers.counters import ServerCounters
from workers.dynk_log import PluginStats, last_stats

CORPUS = Path(".cache/data/corpora/code_complete.jsonl")
NUM_PROMPTS = 8
MAX_TOKENS = 64
LOG_EVERY_STEPS = "20"
CONFIGS: dict[str, tuple[dict | None, dict[str, str]]] = {
    "van": (None, {}),
    "kpad4": ({"method": "suffix", "num_speculative_tokens": 4}, {"LEVER_KPAD": "1"}),
    "kpad8": ({"method": "suffix", "num_speculative_tokens": 8}, {"LEVER_KPAD": "1"}),
    "dynk": (
        {"method": "suffix", "num_speculative_tokens": 12},
        {"LEVER_DYNK": "1", "LEVER_DYNK_KS": "4,6,12"},
    ),
}

pytestmark = pytest.mark.engine


@dataclass
class Run:
    """What one engine did: greedy outputs, counter deltas over them, its log."""

    outputs: list[str]
    delta: ServerCounters
    log: str

    def plugin(self, name: str) -> PluginStats | None:
        return last_stats(self.log, name)


def prompts() -> list[str]:
    with CORPUS.open() as handle:
        return [json.loads(line)["prompt"] for line in handle][:NUM_PROMPTS]


def run_config(name: str, work_dir: Path) -> Run:
    spec_config, lever_env = CONFIGS[name]
    lever_env = {**lever_env, "LEVER_KPAD_LOG_EVERY_STEPS": LOG_EVERY_STEPS}
    lever_env["LEVER_DYNK_LOG_EVERY_STEPS"] = LOG_EVERY_STEPS
    with running_engine(name, spec_config, lever_env, work_dir) as engine:
        before = counters(engine)
        # All in flight at once: batches of several decoding requests, as in the grid.
        with ThreadPoolExecutor(NUM_PROMPTS) as pool:
            outputs = list(pool.map(lambda p: complete(engine, p, MAX_TOKENS), prompts()))
        delta = counters(engine).minus(before)
        log = wait_for_log(engine, "lever_plugins") if spec_config else engine.log_path.read_text()
    return Run(outputs, delta, log)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    work_dir = tmp_path_factory.mktemp("plugins_engine")
    return {name: run_config(name, work_dir) for name in CONFIGS}


def test_plugins_load_only_where_enabled(runs):
    assert "lever_plugins kpad: wrapped" in runs["kpad8"].log
    assert "lever_plugins dynk: wrapped" in runs["dynk"].log
    assert "lever_plugins" not in runs["van"].log
    assert "lever_plugins dynk" not in runs["kpad8"].log


@pytest.mark.parametrize(("name", "k"), [("kpad4", 4), ("kpad8", 8)])
def test_kpad_every_draft_has_k_tokens(runs, name, k):
    delta = runs[name].delta
    assert delta.spec_drafts > 0
    assert delta.spec_draft_tokens == k * delta.spec_drafts
    stats = runs[name].plugin("kpad")
    assert stats is not None and stats.values["k"] == k
    # The proposer's own drafts were shorter: plain suffix would not show K x drafts.
    assert stats.values["padded_tokens"] > 0


@pytest.mark.parametrize("name", ["kpad4", "kpad8", "dynk"])
def test_greedy_outputs_equal_van(runs, name):
    assert runs[name].outputs == runs["van"].outputs


def test_dynk_logs_its_decisions(runs):
    stats = runs["dynk"].plugin("dynk")
    assert stats is not None
    assert set(stats.steps_by_k) == {4, 6, 12}
    assert stats.steps > 0 and sum(stats.steps_by_k.values()) == stats.steps
    assert 0.0 < stats.values["p_accept"] < 1.0
    delta = runs["dynk"].delta
    assert delta.spec_drafts > 0
    assert 4 <= delta.spec_draft_tokens / delta.spec_drafts <= 12

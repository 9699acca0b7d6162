"""Evidence that the plugins run inside vLLM and preserve output (CPU engine, SmolLM2, float32).

(a) kpad is loaded and active: the server's counters show draft tokens = K x drafts;
(b) greedy outputs with kpad equal those of plain vLLM (van), token for token;
(c) dynk runs, logs its per-K decisions, and also preserves output;
(d) dynk's per-cell columns (workers/signals/dynk_log.py), taken over a window after a warm-up
    the way the runner takes them, add up to the server's own draft counters: drafts
    at two or more K values and draft tokens = sum over K of K x drafts, which plain
    suffix (no plugin, ragged drafts) would show neither of; on this CPU engine with
    --enforce-eager every forward pass is recorded as NONE (no CUDA graph).
van and kpad4 are launched here; kpad8 and dynk are measured on test_reset_engine.py's
bestkpad and dynk launches after those tests' cells and a reset (one launch serves both
modules: tests/plugins_engine/conftest.py), which that module shows equals a new launch.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.plugins_engine.serve import complete, counters, running_engine, wait_for_log
from workers.engine.process import Engine
from workers.signals.counters import ServerCounters
from workers.signals.dynk_log import PluginStats, columns_when_idle, last_stats, wait_for_idle_line

CORPUS = Path(".cache/data/corpora/code_complete.jsonl")
NUM_PROMPTS = 8
# dynk only: prompts after the measured ones, sent first, as the runner's warm-up is.
WARMUP_PROMPTS = 2
MAX_TOKENS = 64
LOG_EVERY_STEPS = "20"
# The engines launched for this module alone; kpad8 and dynk are measured on test_reset_engine.py's
# bestkpad and dynk launches (tests/plugins_engine/conftest.py), after those tests' reset cycle.
CONFIGS: dict[str, tuple[dict | None, dict[str, str]]] = {
    "van": (None, {}),
    "kpad4": ({"method": "suffix", "num_speculative_tokens": 4}, {"LEVER_KPAD": "1"}),
}
# This module's name for a run -> the K=8 lever launch it is measured on (test_reset_engine.LEVERS).
ON_K8_LAUNCH = {"kpad8": "bestkpad", "dynk": "dynk"}
# Both plugins log a summary every 20 steps (the tests below read the last one).
LOG_ENV = {"LEVER_KPAD_LOG_EVERY_STEPS": LOG_EVERY_STEPS, "LEVER_DYNK_LOG_EVERY_STEPS": LOG_EVERY_STEPS}

pytestmark = pytest.mark.engine


@dataclass
class Run:
    """What one engine did: greedy outputs, counter deltas over them, its log."""

    outputs: list[str]
    delta: ServerCounters
    log: str
    # workers/signals/dynk_log.py's columns over the measured requests (None values without dynk).
    dynk_columns: dict[str, Any]

    def plugin(self, name: str) -> PluginStats | None:
        return last_stats(self.log, name)


def prompts(start: int = 0, count: int = NUM_PROMPTS) -> list[str]:
    with CORPUS.open() as handle:
        return [json.loads(line)["prompt"] for line in handle][start : start + count]


def measure(engine: Engine, spec_config: dict | None, lever_env: dict[str, str]) -> Run:
    """The module's cell on a running engine: its greedy outputs, counter deltas and log."""
    if "LEVER_DYNK" in lever_env:
        for prompt in prompts(NUM_PROMPTS, WARMUP_PROMPTS):
            complete(engine, prompt, MAX_TOKENS)
    # As the runner does: the plugin's idle line closes the warm-up before the window opens.
    start_offset = wait_for_idle_line(engine.log_path)
    before = counters(engine)
    # All in flight at once: batches of several decoding requests, as in the grid.
    with ThreadPoolExecutor(NUM_PROMPTS) as pool:
        outputs = list(pool.map(lambda p: complete(engine, p, MAX_TOKENS), prompts()))
    delta = counters(engine).minus(before)
    dynk_columns = columns_when_idle(engine.log_path, start_offset)
    log = wait_for_log(engine, "lever_plugins") if spec_config else engine.log_path.read_text()
    return Run(outputs, delta, log, dynk_columns)


def run_config(name: str, work_dir: Path) -> Run:
    spec_config, lever_env = CONFIGS[name]
    with running_engine(name, spec_config, {**lever_env, **LOG_ENV}, work_dir) as engine:
        return measure(engine, spec_config, lever_env)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, k8_launches) -> dict[str, Run]:
    work_dir = tmp_path_factory.mktemp("plugins_engine")
    own = {name: run_config(name, work_dir) for name in CONFIGS}
    return {**own, **{name: k8_launches[lever].plugin_run for name, lever in ON_K8_LAUNCH.items()}}


def test_plugins_load_only_where_enabled(runs):
    assert "lever_plugins kpad: wrapped" in runs["kpad8"].log
    assert "lever_plugins dynk: wrapped" in runs["dynk"].log
    # The lifetime plugin (not a lever) is on in every engine; no lever plugin is in van's.
    assert "lever_plugins lifetime" in runs["van"].log
    assert "lever_plugins kpad" not in runs["van"].log and "lever_plugins dynk" not in runs["van"].log
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
    assert set(stats.steps_by_k) == {4, 6, 8}
    assert stats.steps > 0 and sum(stats.steps_by_k.values()) == stats.steps
    assert 0.0 < stats.values["p_accept"] < 1.0
    delta = runs["dynk"].delta
    assert delta.spec_drafts > 0
    assert 4 <= delta.spec_draft_tokens / delta.spec_drafts <= 8


def per_k(column: str | None) -> dict[int, Any]:
    assert column is not None, "no dynk summary lines in the window: the plugin did not run"
    return {int(k): v for k, v in json.loads(column).items()}


def test_dynk_drafts_per_k_add_up_to_the_server_counters(runs):
    cols = runs["dynk"].dynk_columns
    assert cols["dynk_counts_exact"] is True
    drafts = per_k(cols["dynk_drafts_by_k_json"])
    used = sorted(k for k, n in drafts.items() if n > 0)
    assert len(used) >= 2, f"drafts per K {drafts}: the controller used one K only"
    delta = runs["dynk"].delta
    assert delta.spec_drafts == sum(drafts.values())
    # Every verified draft had exactly its step's K tokens: plain suffix's ragged drafts would not.
    assert delta.spec_draft_tokens == sum(k * n for k, n in drafts.items())


def test_dynk_records_each_forward_pass_mode_per_k(runs):
    cols = runs["dynk"].dynk_columns
    decisions = per_k(cols["dynk_steps_by_k_json"])
    drafts = per_k(cols["dynk_drafts_by_k_json"])
    graphs = per_k(cols["dynk_graph_steps_by_k_json"])
    # CPU engine, --enforce-eager: no CUDA graphs, so every pass is NONE, and recorded as such.
    assert all(modes["full"] == 0 and modes["piecewise"] == 0 for modes in graphs.values())
    assert cols["dynk_full_step_share"] == 0.0
    for k, n in drafts.items():
        passes = sum(graphs[k].values())
        # A pass verifying K drafts follows a step the controller ran at K, inside the window.
        assert (passes > 0) == (n > 0) and passes <= decisions[k]
    assert graphs[0]["none"] > 0  # the prefill step(s) verified no draft

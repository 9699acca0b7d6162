"""Reset == fresh (issue 29 item 3): a drafting engine reset between cells drafts as a new launch does.

One CPU engine per lever (SmolLM2, float32, greedy, requests one at a time so
every step's batch is the same on every run), loaded with the reset extension
and vLLM's dev endpoints as the harness loads them (workers/engine/args.py):
1. `fresh`: the cell's prompts on the just-started engine;
2. other corpora and the cell's own prompts are served (what earlier cells leave);
3. `stale`: the cell's prompts again, without a reset;
4. the reset (workers/engine/reset.py: suffix cache, draft hook decisions, prefix cache);
5. `reset`: the cell's prompts again.
`reset` must equal `fresh` in outputs and in vLLM's own draft, acceptance and
prefix-cache counters; `stale` must differ from it (what the test would catch
if the reset did nothing).

Then one shared launch (issue 29 item 2: LEVER_SWITCH=1, lever_plugins/switch.py)
serves other prompts and then the cell once per draft hook, each after a reset
that selects it (dynk, kpad, suffix): each must equal the fresh cell of that
lever's own launch, whose counters differ from lever to lever (so a hook left
unswitched would be caught).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.plugins_engine.serve import complete, counters, running_engine
from workers.engine.args import DEV_MODE_ENV, RESET_EXTENSION
from workers.engine.process import Engine
from workers.engine.reset import ResetReport, reset_engine
from workers.signals.counters import ServerCounters

CORPORA = Path(".cache/data/corpora")
# 4 prompts per cell, one at a time, three cells and the switched ones: the counters still differ
# between a stale and a fresh engine by the drafts the stale tree accepts from the cell's own outputs.
CELL_PROMPTS = 4
# Requests go one at a time (26 per lever launch), so their length is most of a launch's time: at 16
# tokens (2026-12-05, alone on the 2-core box, one run) stale still differs from fresh in every
# lever's counters and each switched hook from the others, and the directory took 324 s.
MAX_TOKENS = 16
SUFFIX_K8 = {"method": "suffix", "num_speculative_tokens": 8}
DYNK_COST = "0.0009765625"
LEVERS: dict[str, tuple[dict, dict[str, str]]] = {
    "suffix": (SUFFIX_K8, {}),
    "bestkpad": (SUFFIX_K8, {"LEVER_KPAD": "1"}),
    # At K=8 (max K), so the shared launch below holds all three levers at one argv. The token cost
    # is for test_plugins_engine.py's dynk cell on this launch: its prompts accept about 0.35-0.55
    # of draft tokens here, and at a verified-token cost of 1/1024 (default 1/512) the controller's
    # choice in that range turns on the batch size (K4 at 8 requests below p = 0.5, K6 at 4 or
    # fewer), which falls as requests finish: more than one K gets used, as that test requires.
    "dynk": (SUFFIX_K8, {"LEVER_DYNK": "1", "LEVER_DYNK_KS": "4,6,8", "LEVER_DYNK_TOKEN_COST": DYNK_COST}),
}
# The shared launch's environment (workers/engine_args.launch_env): the switch, dynk's K set and cost.
SWITCH_ENV = {"LEVER_SWITCH": "1", "LEVER_DYNK_KS": "4,6,8", "LEVER_DYNK_TOKEN_COST": DYNK_COST}
HOOKS = {"dynk": "dynk", "bestkpad": "kpad", "suffix": "suffix"}
# vLLM's counters that must match between a fresh and a reset engine.
COMPARED = (
    "generation_tokens",
    "prompt_tokens",
    "spec_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "prefix_cache_hits",
    "prefix_cache_queries",
)

pytestmark = pytest.mark.engine


@dataclass
class Cell:
    outputs: list[str]
    delta: ServerCounters

    def compared(self) -> dict[str, float | list[float]]:
        values: dict[str, float | list[float]] = {name: getattr(self.delta, name) for name in COMPARED}
        values["spec_accepted_per_pos"] = self.delta.spec_accepted_per_pos
        return values


@dataclass
class LeverRun:
    fresh: Cell
    stale: Cell
    reset: Cell
    report: ResetReport
    unauthenticated_rpc_status: int
    unauthenticated_v1_status: int
    # What `after` measured on the launch once its cells were done and it was reset again.
    plugin_run: Any = None


def cell_prompts() -> list[str]:
    with (CORPORA / "code_complete.jsonl").open() as handle:
        return [json.loads(line)["prompt"] for line in handle][:CELL_PROMPTS]


def other_prompts() -> list[str]:
    """Earlier cells' prompts: other code_complete prompts and chat_bench questions as plain text."""
    with (CORPORA / "code_complete.jsonl").open() as handle:
        code = [json.loads(line)["prompt"] for line in handle][CELL_PROMPTS : CELL_PROMPTS + 4]
    with (CORPORA / "chat_bench.jsonl").open() as handle:
        chat = [json.loads(line)["messages"][0]["content"] for line in handle][:4]
    return code + chat


def run_cell(engine: Engine, prompts: list[str]) -> Cell:
    before = counters(engine)
    outputs = [complete(engine, prompt, MAX_TOKENS) for prompt in prompts]
    return Cell(outputs, counters(engine).minus(before))


def status_without_key(engine: Engine, path: str, body: dict | None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        engine.endpoint.base_url + path, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def run_lever(
    name: str,
    work_dir: Path,
    extra_env: dict[str, str] | None = None,
    after: Callable[[Engine], Any] | None = None,
) -> LeverRun:
    """The lever's own launch: fresh, stale, reset cells; then, reset again, `after` on it (if given)."""
    spec_config, lever_env = LEVERS[name]
    extra = ("--worker-extension-cls", RESET_EXTENSION)
    env = {**lever_env, **(extra_env or {}), DEV_MODE_ENV: "1"}
    with running_engine(name, spec_config, env, work_dir, extra) as engine:
        prompts = cell_prompts()
        fresh = run_cell(engine, prompts)
        for prompt in other_prompts():
            complete(engine, prompt, MAX_TOKENS)
        stale = run_cell(engine, prompts)
        report = reset_engine(engine.endpoint.base_url, engine.endpoint.api_key)
        reset = run_cell(engine, prompts)
        # The security question (docs/reset.md): does --api-key guard the dev endpoints?
        rpc_status = status_without_key(engine, "/collective_rpc", {"method": "lever_drafter_state"})
        v1_status = status_without_key(engine, "/v1/models", None)
        plugin_run = None
        if after is not None:
            again = reset_engine(engine.endpoint.base_url, engine.endpoint.api_key)
            assert again.ok and again.left() == report.left(), again.problem
            plugin_run = after(engine)
    return LeverRun(fresh, stale, reset, report, rpc_status, v1_status, plugin_run)


@dataclass
class SwitchedCell:
    report: ResetReport
    cell: Cell


def run_switched(work_dir: Path) -> tuple[dict[str, SwitchedCell], str]:
    """One launch, other prompts first, then the cell under each lever's hook; and the engine log."""
    extra = ("--worker-extension-cls", RESET_EXTENSION)
    out = {}
    with running_engine("switch", SUFFIX_K8, {**SWITCH_ENV, DEV_MODE_ENV: "1"}, work_dir, extra) as engine:
        prompts = cell_prompts()
        for prompt in other_prompts():
            complete(engine, prompt, MAX_TOKENS)
        for lever, hook in HOOKS.items():
            report = reset_engine(engine.endpoint.base_url, engine.endpoint.api_key, hook=hook)
            out[lever] = SwitchedCell(report, run_cell(engine, prompts))
        log = engine.log_path.read_text(errors="replace")
    return out, log


@pytest.fixture(scope="module")
def switched(tmp_path_factory) -> tuple[dict[str, SwitchedCell], str]:
    cells, log = run_switched(tmp_path_factory.mktemp("switch_engine"))
    for lever, run in cells.items():
        print(f"switch {lever}: {run.cell.compared()} (hook {run.report.active_hook})")
    return cells, log


@pytest.fixture(scope="module")
def runs(k8_launches) -> dict[str, LeverRun]:
    """Each lever's launch (tests/plugins_engine/conftest.py: test_plugins_engine.py measures on two)."""
    out = k8_launches
    for name, run in out.items():  # the measured figures, for the record (pytest -s)
        for label in ("fresh", "stale", "reset"):
            print(f"{name} {label}: {getattr(run, label).compared()}")
        print(f"{name} reset report: {run.report.columns()}")
    return out


@pytest.mark.parametrize("lever", list(LEVERS))
def test_the_reset_leaves_an_empty_engine(runs, lever):
    report = runs[lever].report
    assert report.ok, report.problem
    assert report.prefix_cache_reset is True
    assert report.left() == {
        "cached_requests": 0,
        "active_requests": 0,
        "global_tree_seqs": 0,
        "runner_requests": 0,
    }
    # It emptied something: the earlier cells' outputs were in the tree.
    assert report.found()["cached_requests"] > 0


@pytest.mark.parametrize("lever", list(LEVERS))
def test_a_reset_engine_drafts_exactly_as_a_fresh_one(runs, lever):
    run = runs[lever]
    assert run.fresh.delta.spec_drafts > 0
    assert run.reset.outputs == run.fresh.outputs
    assert run.reset.compared() == run.fresh.compared()


@pytest.mark.parametrize("lever", list(LEVERS))
def test_without_the_reset_the_same_cell_drafts_differently(runs, lever):
    """What the equivalence test catches: a skipped reset changes the counters (not the outputs)."""
    run = runs[lever]
    assert run.stale.outputs == run.fresh.outputs
    assert run.stale.compared() != run.fresh.compared()
    assert run.stale.delta.spec_accepted_tokens > run.fresh.delta.spec_accepted_tokens


def test_dev_endpoints_do_not_ask_for_the_api_key(runs):
    """vLLM's AuthenticationMiddleware guards /v1, /v2, /inference and /cohere only (docs/reset.md)."""
    run = runs["suffix"]
    assert run.unauthenticated_v1_status == 401
    assert run.unauthenticated_rpc_status == 200


def test_the_shared_launch_runs_the_switch():
    """No engine needed: the entry point is what vLLM loads (pip install -e . registers it)."""
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
    assert names.get("switch") == "lever_plugins.switch:register"


@pytest.mark.parametrize("lever", list(HOOKS))
def test_a_switched_hook_on_a_reset_shared_engine_drafts_as_the_levers_own_launch(runs, switched, lever):
    cells, log = switched
    run = cells[lever]
    assert "lever_plugins switch: wrapped" in log
    assert run.report.ok, run.report.problem
    assert run.report.active_hook == HOOKS[lever]
    assert run.cell.outputs == runs[lever].fresh.outputs
    assert run.cell.compared() == runs[lever].fresh.compared()


def test_the_hooks_draft_differently_so_a_wrong_hook_would_be_caught(runs):
    fresh = {lever: runs[lever].fresh.compared() for lever in HOOKS}
    assert fresh["suffix"] != fresh["bestkpad"] != fresh["dynk"] != fresh["suffix"]
    # kpad pads every draft to K: 8 draft tokens per draft exactly.
    kpad = runs["bestkpad"].fresh.delta
    assert kpad.spec_draft_tokens == 8 * kpad.spec_drafts

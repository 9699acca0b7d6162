"""The dynk hook's per-K tally and idle flush, driven with stand-in batches (no vLLM)."""

import logging
from types import SimpleNamespace

from lever_plugins.controller import DynamicK
from lever_plugins.dynk import DynkHook
from workers.signals.dynk_log import parse_log

PROPOSER = SimpleNamespace(num_speculative_tokens=12, max_model_len=2048)


def batch(req_ids: list[str]) -> SimpleNamespace:
    return SimpleNamespace(req_ids=req_ids, num_tokens_no_spec=[100] * len(req_ids))


def make_hook() -> DynkHook:
    # checked_max_k: the engine K is already known, so no flusher thread starts in tests.
    return DynkHook(controller=DynamicK(ks=(4, 12)), log_every_steps=1000, checked_max_k=True)


def step(hook: DynkHook, req_ids: list[str], sampled: list[list[int]], mode: str = "NONE") -> list[list[int]]:
    hook.observe_mode(mode)  # the dispatcher runs before the forward pass, propose after it
    return hook(PROPOSER, batch(req_ids), sampled, [[1, 2]] * len(req_ids))


def test_each_pass_is_charged_to_the_k_of_the_drafts_it_verified():
    hook = make_hook()
    first = step(hook, ["a", "b"], [[5], [5]], mode="PIECEWISE")  # prefill done: nothing to verify yet
    k = hook.last_draft_k
    assert [len(d) for d in first] == [k, k]
    step(hook, ["a", "b"], [[5, 6], [5]], mode="FULL")  # verifies both drafts at k
    assert hook.tally.modes_by_k[0] == {"full": 0, "piecewise": 1, "none": 0}
    assert hook.tally.modes_by_k[k]["full"] == 1
    assert hook.tally.drafts_by_k[k] == 2
    # b finished after that step: its last draft is never verified, so it is not counted.
    step(hook, ["a"], [[7]])
    assert sum(hook.tally.drafts_by_k.values()) == 3
    assert sum(hook.controller.steps_by_k.values()) == 3


def test_a_step_without_sampled_tokens_verifies_nothing_and_forgets_drafts():
    hook = make_hook()
    step(hook, ["a"], [[5]])
    step(hook, ["a"], [[]])  # partial prefill only
    step(hook, ["a"], [[5]])
    assert sum(hook.tally.drafts_by_k.values()) == 0
    assert hook.tally.modes_by_k[0]["none"] == 3


def test_idle_flush_writes_one_idle_line_and_the_next_step_writes_at_once(caplog):
    hook = make_hook()
    with caplog.at_level(logging.INFO, logger="vllm.lever_plugins"):
        step(hook, ["a"], [[5]])  # step 1 always logs
        step(hook, ["a"], [[5, 6]])
        assert not hook.flush_if_idle(hook.last_step_s + 0.1)  # not idle long enough
        assert hook.flush_if_idle(hook.last_step_s + 1.0)
        assert not hook.flush_if_idle(hook.last_step_s + 2.0)  # nothing new since
        step(hook, ["b"], [[5]])  # resumes: logged at once, so an idle line is never stale
    lines = parse_log(caplog.text)
    assert [(s.steps, s.idle) for s in lines] == [(1, False), (2, True), (3, False)]
    assert sum(lines[1].drafts_by_k.values()) == 1  # step 2 verified step 1's draft


def test_idle_flush_follows_a_periodic_line_on_the_last_step(caplog):
    # The load's last step fell on a periodic line: the reader still needs an idle line.
    hook = DynkHook(controller=DynamicK(ks=(4, 12)), log_every_steps=2, checked_max_k=True)
    with caplog.at_level(logging.INFO, logger="vllm.lever_plugins"):
        step(hook, ["a"], [[5]])
        step(hook, ["a"], [[5]])
        assert hook.flush_if_idle(hook.last_step_s + 1.0)
    assert [(s.steps, s.idle) for s in parse_log(caplog.text)] == [(1, False), (2, False), (2, True)]

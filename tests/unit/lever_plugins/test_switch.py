"""lever_plugins/switch.py and the reset extension's hook selection, without vLLM."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lever_plugins import proposer_patch
from lever_plugins.reset_ext import ResetExtension
from lever_plugins.switch import SwitchHook


class Recorder:
    def __init__(self, name: str, pad: int) -> None:
        self.name, self.pad, self.calls, self.resets = name, pad, 0, 0

    def __call__(self, proposer, input_batch, sampled, drafts):
        self.calls += 1
        return [[*d, self.pad] for d in drafts]

    def reset_decisions(self) -> None:
        self.resets += 1


def switch() -> SwitchHook:
    return SwitchHook(hooks={"kpad": Recorder("kpad", 0), "dynk": Recorder("dynk", 9)})


def test_suffix_leaves_drafts_and_a_selected_hook_shapes_them():
    hook = switch()
    assert hook(None, None, [[1]], [[5, 6]]) == [[5, 6]]
    hook.select("kpad")
    assert hook(None, None, [[1]], [[5, 6]]) == [[5, 6, 0]]
    hook.select("dynk")
    assert hook(None, None, [[1]], [[5]]) == [[5, 9]]
    assert hook.hooks["kpad"].calls == 1 and hook.hooks["dynk"].calls == 1


def test_selecting_resets_decisions_and_an_unknown_name_is_refused():
    hook = switch()
    hook.select("dynk")
    assert hook.hooks["dynk"].resets == 1 and hook.hooks["kpad"].resets == 1
    with pytest.raises(ValueError, match="unknown draft hook 'eagle'"):
        hook.select("eagle")
    assert hook.active == "dynk"


class Cache:
    """SuffixDecodingCache's surface the extension reads."""

    def __init__(self, cached: int = 0, max_tree_depth: int = 24, max_cached_requests: int = 100) -> None:
        self.cached_requests = set(range(cached))
        self.active_requests: set[int] = set()
        self.max_tree_depth, self.max_cached_requests = max_tree_depth, max_cached_requests


def worker(drafter: object | None, requests: int = 0) -> ResetExtension:
    ext = ResetExtension()
    ext.model_runner = SimpleNamespace(drafter=drafter, requests=dict.fromkeys(range(requests)))
    return ext


@pytest.fixture
def installed(monkeypatch):
    hook = switch()
    monkeypatch.setattr(proposer_patch, "installed_hook", lambda: hook)
    return hook


def test_the_reset_selects_the_asked_hook_and_reports_it(installed):
    drafter = SimpleNamespace(suffix_cache=Cache(cached=3))
    answer = worker(drafter).lever_reset_drafter("kpad")
    assert answer["reset"] is True
    assert answer["before"]["active_hook"] == "suffix" and answer["after"]["active_hook"] == "kpad"
    assert answer["after"]["suffix_cache"]["cached_requests"] == 0
    assert installed.active == "kpad"


def test_the_reset_refuses_an_unknown_hook_or_requests_in_flight(installed):
    drafter = SimpleNamespace(suffix_cache=Cache(cached=3))
    bad = worker(drafter).lever_reset_drafter("eagle")
    assert bad["reset"] is False and "unknown draft hook" in bad["error"]
    assert len(drafter.suffix_cache.cached_requests) == 3  # nothing reset on a refusal
    busy = worker(drafter, requests=2).lever_reset_drafter("kpad")
    assert busy["reset"] is False and busy["error"] == "requests in flight" and installed.active == "suffix"


def test_a_hook_asked_of_an_engine_without_a_switch_is_refused(monkeypatch):
    monkeypatch.setattr(proposer_patch, "installed_hook", lambda: None)
    answer = worker(SimpleNamespace(suffix_cache=Cache())).lever_reset_drafter("kpad")
    assert answer["reset"] is False and "LEVER_SWITCH=1" in answer["error"]


def test_an_engine_without_a_drafter_resets_nothing_of_its_own():
    """van on a shared launch: the prefix cache (reset by the harness) is all it keeps."""
    answer = worker(None).lever_reset_drafter()
    assert answer["reset"] is True and answer["after"]["active_hook"] is None
    assert worker(None).lever_reset_drafter("kpad")["reset"] is False


def test_the_state_reports_each_hooks_counters_for_the_harness_window():
    from lever_plugins.pad_policy import PadStats
    from lever_plugins.reset_ext import hook_counters
    from lever_plugins.switch import build_hooks

    hook = SwitchHook(hooks=build_hooks())
    hook.hooks["kpad"].steps = 3
    hook.hooks["kpad"].stats.add(PadStats(drafts=4, draft_tokens=32, padded_tokens=10, truncated_tokens=1))
    counters = hook_counters(hook)
    assert counters["kpad"] == {
        "steps": 3, "drafts": 4, "draft_tokens": 32, "padded_tokens": 10, "truncated_tokens": 1,
    }  # fmt: skip
    assert counters["dynk"]["drafts"] == 0 and counters["dynk"]["steps"] == 0
    assert hook_counters(None) == {}

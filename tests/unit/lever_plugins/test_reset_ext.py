"""The reset extension counts the requests in either of vLLM's model runners (no vLLM: stand-ins)."""

from __future__ import annotations

from types import SimpleNamespace

from lever_plugins.reset_ext import ResetExtension, runner_requests


def v1_runner(n: int) -> SimpleNamespace:
    return SimpleNamespace(drafter=None, requests=dict.fromkeys(range(n)))


def v2_runner(n: int) -> SimpleNamespace:
    """Model Runner V2 (van and w4a4 on a GPU): no `requests`, its states keep the ids."""
    return SimpleNamespace(req_states=SimpleNamespace(req_id_to_index={f"r{i}": i for i in range(n)}))


def worker(runner: SimpleNamespace) -> ResetExtension:
    ext = ResetExtension()
    ext.model_runner = runner
    return ext


def test_requests_are_counted_in_either_runner():
    assert [runner_requests(v1_runner(2)), runner_requests(v2_runner(3))] == [2, 3]
    assert runner_requests(SimpleNamespace()) == 0  # neither: nothing to count


def test_van_on_model_runner_v2_is_not_reset_with_requests_in_flight():
    busy = worker(v2_runner(2)).lever_reset_drafter()
    assert busy["reset"] is False and busy["error"] == "requests in flight"
    assert busy["before"]["runner_requests"] == 2
    assert worker(v2_runner(0)).lever_reset_drafter()["reset"] is True

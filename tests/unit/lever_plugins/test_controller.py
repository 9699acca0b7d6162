import pytest

from lever_plugins.controller import (
    AcceptanceEstimate,
    DynamicK,
    choose_k,
    expected_tokens_per_step,
    step_cost,
)


def test_expected_tokens_per_step():
    assert expected_tokens_per_step(0.0, 12) == 1.0
    assert expected_tokens_per_step(1.0, 4) == 5.0
    assert expected_tokens_per_step(0.5, 2) == pytest.approx(1.75)


def test_step_cost_grows_with_verified_tokens():
    assert step_cost(4, 8, 0.0) == 1.0
    assert step_cost(12, 32, 1 / 512) > step_cost(4, 32, 1 / 512)


@pytest.mark.parametrize(
    ("p_accept", "batch_size", "expected"),
    [
        (0.95, 1, 12),  # drafts almost always accepted, verification nearly free
        (0.9, 8, 12),
        (0.5, 32, 4),  # half the positions fail, a big batch makes long drafts costly
        (0.05, 1, 4),  # hopeless drafts: the smallest K
    ],
)
def test_choose_k(p_accept, batch_size, expected):
    assert choose_k(p_accept, batch_size, (4, 6, 12), token_cost=1 / 512) == expected


def test_larger_batches_never_choose_a_larger_k():
    for p in (0.3, 0.6, 0.8, 0.9, 0.97):
        picks = [choose_k(p, b, (4, 6, 12), 1 / 512) for b in (1, 4, 16, 64, 256)]
        assert picks == sorted(picks, reverse=True)


def test_estimate_counts_one_failure_per_short_acceptance():
    est = AcceptanceEstimate(alpha=1.0)  # no smoothing: the last step only
    est.update([(4, 4), (4, 1), (6, 0)])  # 5 successes, 2 failures
    assert est.p_accept == pytest.approx(5 / 7)
    est.update([])  # a step without drafts leaves the estimate alone
    assert est.p_accept == pytest.approx(5 / 7)
    est.update([(0, 0)])
    assert est.p_accept == pytest.approx(5 / 7)


def test_controller_follows_acceptance_and_counts_decisions():
    ctl = DynamicK(ks=(12, 4, 6), token_cost=1 / 512)
    assert ctl.ks == (4, 6, 12)
    # high acceptance: every 12-token draft fully accepted
    picks = [ctl.decide([(12, 12)] * 4, batch_size=4) for _ in range(30)]
    assert picks[-1] == 12
    # then drafts start failing at once
    picks += [ctl.decide([(12, 0)] * 4, batch_size=4) for _ in range(30)]
    assert picks[-1] == 4
    assert ctl.steps == 60
    assert sum(ctl.steps_by_k.values()) == 60
    assert ctl.steps_by_k[12] > 0 and ctl.steps_by_k[4] > 0
    assert ctl.last_k == 4 and ctl.last_batch_size == 4

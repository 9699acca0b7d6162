"""analysis.variance_reduction: CUPED removes exactly the covariate's share, refuses covariates the
lever moves or that hold the pair's own noise, and keeps the decision's false-keep rate."""

import math

import numpy as np
import pytest

from analysis.variance_reduction import (
    SimNoise,
    adjusted_judgement,
    cuped,
    evaluate,
    lever_independent,
    rows,
    shares_noise,
    simulate,
    theta_ols,
)


def _known_effect(n: int = 4000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """d = 0.1 + 0.5 c + e with sd(c) = 1 and sd(e) = 0.5: c explains 0.25 / (0.25 + 0.25) of Var(d)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(0.0, 1.0, n)
    return 0.1 + 0.5 * c + rng.normal(0.0, 0.5, n), c


def test_adjustment_removes_the_known_share():
    d, c = _known_effect()
    red = evaluate(d, c)
    assert theta_ols(d, c) == pytest.approx(0.5, abs=0.03)
    assert red.removed_share == pytest.approx(0.5, abs=0.04)
    assert red.df_plain - red.df_adjusted == 1
    assert red.n_equal_width < red.n  # half the variance: about half the pairs
    assert red.n_equal_width == pytest.approx(red.n / 2, rel=0.1)


def test_a_useless_covariate_removes_nothing_and_costs_a_degree_of_freedom():
    rng = np.random.default_rng(2)
    d, c = rng.normal(0.0, 0.1, 6), rng.normal(0.0, 1.0, 6)
    red = evaluate(d, c)
    assert red.half_adjusted > red.half_plain * 0.9  # t_{0.95,4} > t_{0.95,5}: little or no gain
    with pytest.raises(ValueError):
        evaluate(d[:3], c[:3])


def test_sample_mean_centering_leaves_the_paired_estimate_unchanged():
    d, c = _known_effect(50)
    assert cuped(d, c, float(c.mean())).mean() == pytest.approx(d.mean(), abs=1e-12)
    # with the covariate's mean known from outside, the estimate moves to the intercept at it
    j = adjusted_judgement(d, c, 0.0)
    assert math.log(j.ratio) == pytest.approx(d.mean() - theta_ols(d, c) * c.mean(), abs=1e-12)
    assert j.lo < math.exp(0.1) < j.hi


def test_a_covariate_the_lever_moves_is_refused():
    rng = np.random.default_rng(3)
    c_base = np.log(rng.normal(131_000, 3_000, 8))
    assert lever_independent(c_base, c_base + rng.normal(0.0, 0.003, 8))[0]
    assert not lever_independent(c_base, c_base - 0.06 + rng.normal(0.0, 0.003, 8))[0]  # the tune's suffix


def test_the_pairs_own_baseline_throughput_is_refused():
    ln_base = np.log([9667.0, 10400.0, 8945.0, 8985.0, 8031.0])
    assert shares_noise(2.0 * ln_base + 1.0, ln_base)
    assert not shares_noise(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), ln_base)


def test_error_rates_known_mean_holds_five_percent_the_textbook_and_circular_ones_do_not():
    noise = SimNoise(sd_resid=0.12, theta=0.5, sd_c=0.15)
    rates = simulate(noise, n=5, gain=0.0, draws=400, seed=7)
    assert rates["cuped_known"] <= 0.09  # 5 % +- 2 SE at 400 draws
    assert rates["circular"] > 0.08  # theta fits the van run's own noise: the interval is too narrow


def test_stored_records_table():
    table = rows()
    by = {(r["dataset"], r["compare"], r["covariate"]): r for r in table}
    # suffix's window holds ~6 % fewer output tokens than van's on the same prompts: refused
    assert not by[("2026-12-01 tune", "suffix/van", "ln_out_tok")]["lever_independent"]
    assert by[("2026-12-04 lever crosscheck", "bestkpad/suffix", "ln_out_tok")]["lever_independent"]
    assert all(r["removed_pct"] < 10 for r in table)  # the record's finding: nothing worth a df

import math

import pytest

from analysis.compare import compare
from analysis.decision import t_quantile


def reps(values, session="s"):
    return tuple((session, i, v) for i, v in enumerate(values))


def test_a_real_gain_carries_its_interval_and_repeats():
    out = compare(reps([105.0, 106.0, 104.0]), reps([100.0, 101.0, 99.0]), 0.03)
    logs = [math.log(105 / 100), math.log(106 / 101), math.log(104 / 99)]
    mean = sum(logs) / 3
    half = t_quantile(0.95, 2) * math.sqrt(sum((x - mean) ** 2 for x in logs) / 2 / 3)
    assert out["rel_diff"] == pytest.approx(math.exp(mean) - 1)
    assert (out["ci_lo"], out["ci_hi"]) == pytest.approx((math.exp(mean - half), math.exp(mean + half)))
    assert (out["n_value"], out["n_reference"], out["paired"]) == (3, 3, True)
    assert out["label"] == "real gain" and out["beyond_drift"] is True
    assert out["verdict"].startswith("real gain: 1.050x [") and "n=3/3 paired, band 3.0%" in out["verdict"]


def test_a_point_gain_beyond_the_band_with_a_wide_interval_is_within_noise():
    out = compare(reps([110.0, 100.0]), reps([100.0, 100.0]), 0.03)
    assert out["rel_diff"] > 0.03  # the old rule (point estimate beyond drift) would call it real
    assert out["label"] == "within noise" and out["beyond_drift"] is False


def test_unknown_drift_and_single_repeats_are_not_judged():
    out = compare(reps([150.0]), reps([100.0, 101.0, 99.0], "t"), math.nan)
    assert out["beyond_drift"] is None and out["label"] == "not judged (n<2)"
    assert "band unknown" in out["verdict"] and out["n_value"] == 1
    assert compare((), reps([100.0]), 0.02)["verdict"] == "no reference"

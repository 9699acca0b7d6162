import math

import pytest

from analysis.compare import compare


def test_beyond_drift_and_beyond_repeats():
    out = compare(105.0, 100.0, 0.03, mads=(1.0, 1.0), repeats=(3, 3))
    assert out["rel_diff"] == pytest.approx(0.05)
    assert out["beyond_drift"] is True and out["beyond_repeats"] is True
    assert out["repeats_spread_tok_per_s"] == 2.0
    assert out["verdict"].startswith("+5.0%: beyond drift (band 3.0%)")
    assert "beyond repeats' spread" in out["verdict"]


def test_within_drift_and_within_repeats():
    out = compare(102.0, 100.0, 0.03, mads=(2.0, 1.5), repeats=(2, 2))
    assert out["beyond_drift"] is False and out["beyond_repeats"] is False
    assert "within drift" in out["verdict"] and "within repeats' spread" in out["verdict"]


def test_unknown_drift_and_single_repeats_are_not_judged():
    out = compare(150.0, 100.0, math.nan, mads=(0.0, 0.0), repeats=(1, 3))
    assert out["beyond_drift"] is None and out["beyond_repeats"] is None
    assert "drift unknown (no anchor runs)" in out["verdict"]
    assert "not judged" in out["verdict"]

import math

import pytest

from analysis.stats import geometric_mean


def test_geometric_mean_by_hand():
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)  # sqrt(1 * 4)
    assert geometric_mean([2.0, 8.0, 4.0]) == pytest.approx(4.0)  # cbrt(64)
    assert geometric_mean([1.58, 1.015]) == pytest.approx(1.266373, abs=1e-6)  # sqrt(1.6037)


def test_geometric_mean_of_ratios_is_ratio_of_geometric_means():
    x, y = [10.0, 40.0], [5.0, 10.0]
    ratios = [a / b for a, b in zip(x, y, strict=True)]
    assert geometric_mean(ratios) == pytest.approx(geometric_mean(x) / geometric_mean(y))


@pytest.mark.parametrize("values", [[], [1.0, 0.0], [2.0, -1.0], [1.0, math.nan]])
def test_geometric_mean_undefined_is_nan(values):
    assert math.isnan(geometric_mean(values))

"""Small numeric helpers shared by the analysis: the geometric mean. Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable


def geometric_mean(values: Iterable[float]) -> float:
    """(x_1 * ... * x_n) ** (1 / n) = exp(mean(ln x_i)).

    The mean for ratios (speedups): the geometric mean of x/y equals the ratio of
    the geometric means of x and y, so no reference is privileged. NaN when there
    are no values or any is NaN or <= 0 (a logarithm would be undefined).
    """
    logs = []
    for value in values:
        if value is None or not value > 0:  # NaN and None fail `> 0` too
            return math.nan
        logs.append(math.log(value))
    return math.exp(sum(logs) / len(logs)) if logs else math.nan

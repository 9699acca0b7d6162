"""Repeats only where needed: a group-sequential version of analysis.decision's rule. Pure.

Instead of a fixed grid.repeats, a comparison (lever vs van on one model and
corpus) is measured at the first look (e.g. 3 repeats) and judged; only the
comparisons still undecided get more repeats, look by look, up to the last
look (the cap). Decided means:

  real gain / real loss   the interval lies wholly beyond the drift band (as in analysis.decision)
  within the band         the interval lies wholly inside [1 - b, 1 + b]: no gain beyond the
                          noise is left to find (a non-binding futility stop: it can only keep less)
  too small to matter     with min_gain g > 0: the interval's top lies below 1 + max(b, g): any
                          gain left is one the user said is not worth the repeats (also non-binding)
  the cap                 the last look's label stands, whatever it is

Looking several times and stopping at the first clear interval would keep a lever
that does nothing more often than a single 90 % interval does (5 % one-sided).
The correction (Pocock's constant boundary, for looks at unequal sizes): every
look uses the same wider interval, at the confidence c such that a no-effect
comparison crosses the upper bound at any look with probability a/2 = 5 %:

  Z_k = the look-k statistic, corr(Z_i, Z_j) = sqrt(n_i / n_j) for n_i <= n_j
  P(max_k Z_k > z_c) = a / 2,   c = 1 - 2 (1 - Phi(z_c))

solved with scipy's multivariate normal. For looks (3, 5, 8, 12): z_c = 2.07,
c = 96.2 % (one look at 5: 90 %). `python -m experiments.sequential_power` measures the whole rule's
false keep, power and expected repeats through this module and analysis.decision
(t-intervals at small n, the drift band from the sessions' anchors).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np
from scipy.optimize import brentq
from scipy.stats import multivariate_normal, norm

from analysis.decision import CONFIDENCE, GAIN, LOSS, UNJUDGED, Judgement, Repeat, judge

LOOKS = (3, 5, 8, 12)


def looks_problem(looks: Sequence[int]) -> str | None:
    """Why `looks` are not cumulative repeats (at least 2 each, strictly increasing), or None."""
    out = [int(n) for n in looks]
    if not out or out[0] < 2 or any(b <= a for a, b in pairwise(out)):
        return (
            f"grid.sequential.looks={out}: cumulative repeats at each look, each >= 2 and strictly "
            "increasing, e.g. grid.sequential.looks=[3,5,8,12]"
        )
    return None


def check_looks(looks: Sequence[int]) -> tuple[int, ...]:
    """Looks as cumulative repeats (a config's were checked by grid/compose.py before any of this)."""
    if (problem := looks_problem(looks)) is not None:
        raise ValueError(problem)
    return tuple(int(n) for n in looks)


@lru_cache(maxsize=64)
def pocock_confidence(looks: tuple[int, ...], confidence: float = CONFIDENCE) -> float:
    """The two-sided confidence every look uses so that the whole sequence's one-sided error is
    (1 - confidence) / 2 (module doc). One look: `confidence` itself."""
    looks = check_looks(looks)
    if len(looks) == 1:
        return confidence
    alpha = (1.0 - confidence) / 2.0
    n = np.array(looks, dtype=float)
    cov = np.sqrt(np.minimum.outer(n, n) / np.maximum.outer(n, n))
    mvn = multivariate_normal(
        mean=np.zeros(len(n)), cov=cov, seed=0
    )  # Genz's integration: seeded, repeatable

    def crossing(z: float) -> float:
        return (1.0 - float(mvn.cdf(np.full(len(n), z)))) - alpha

    z = brentq(crossing, norm.ppf(1.0 - alpha), norm.ppf(1.0 - alpha / len(n)) + 0.5, xtol=1e-4)
    return 1.0 - 2.0 * (1.0 - float(norm.cdf(z)))


@dataclass(frozen=True)
class Look:
    """One comparison at its current repeats: its judgement at the corrected confidence and what next."""

    judgement: Judgement
    n: int  # repeats behind it (pairs when paired, else the smaller side)
    decided: bool
    next_repeats: int | None  # the next look's cumulative repeats when undecided, else None
    why: str


def within_band(j: Judgement) -> bool:
    return not math.isnan(j.lo) and j.lo >= 1.0 - j.band and j.hi <= 1.0 + j.band


def look(
    value: Iterable[Repeat],
    reference: Iterable[Repeat],
    band: float,
    looks: Sequence[int] = LOOKS,
    min_gain: float = 0.0,
) -> Look:
    """Judge value / reference at the corrected confidence of `looks` and say whether to go on."""
    looks = check_looks(looks)
    j = judge(value, reference, band, pocock_confidence(looks))
    n = min(j.n_value, j.n_reference)
    following = next((k for k in looks if k > n), None)
    if j.label in (GAIN, LOSS):
        return Look(j, n, True, None, f"{j.label} at n={n}")
    if j.label in UNJUDGED and not (j.label == UNJUDGED[0] and following is not None):
        # The band is unknown (fail closed): more repeats cannot make it known.
        return Look(j, n, True, None, j.label)
    if within_band(j):
        return Look(j, n, True, None, f"within the band at n={n}")
    if min_gain > 0 and j.hi < 1.0 + max(j.band, min_gain):
        return Look(j, n, True, None, f"no gain of {min_gain:.0%} or more left at n={n}")
    if following is None:
        return Look(j, n, True, None, f"{j.label} at the cap n={n}")
    return Look(j, n, False, following, f"interval straddles the band at n={n}: measure up to {following}")

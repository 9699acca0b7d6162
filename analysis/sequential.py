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
The correction is Pocock's constant boundary on the t scale: every look uses the same
nominal confidence c, each look its own t-quantile (n_k - 1 df, as analysis.decision's
paired interval), with c such that a no-effect comparison crosses the upper bound at
any look with probability at most a/2 = 5 %:

  T_k = the look-k paired t statistic over the first n_k of the same normal differences
  P(max_k F_{n_k - 1}(T_k) > 1 - a') <= a/2,   c = 1 - 2 a'

The T_k are not the normal Z_k of the textbook boundary (each carries its own estimate
of the sd, from few repeats), so no closed form holds: a' is the largest level at which at
most a/2 - 2 SE of CALIBRATION_DRAWS simulated no-effect comparisons cross (bisection;
seeded, so the same looks always give the same c; SE the Monte Carlo standard error, so the
calibration's own noise cannot lift the overall error over 5 %). Checked on 2,000,000 fresh
comparisons per schedule (9 schedules, 2 to 11 looks): 4.90-4.95 %. The normal boundary
(Pocock's z_c for correlations sqrt(n_i / n_j)) applied to these t-intervals kept 5.2 %
(looks 5, 12) to 5.6 % (3, 5, 8, 12) and 6.0 % (2..9 and 2..12).
For looks (3, 5, 8, 12): c = 96.7 % (one look at 5: 90 %). Stopping on a real loss or
for futility only ever keeps less. `python -m analysis.sequential_power` measures the
whole rule's false keep, power and expected repeats through this module and
analysis.decision (the drift band from the sessions' anchors).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np
from scipy.stats import t as student_t

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
    """Looks as cumulative repeats (a config's were checked by grid/config/compose.py before any of this)."""
    if (problem := looks_problem(looks)) is not None:
        raise ValueError(problem)
    return tuple(int(n) for n in looks)


CALIBRATION_DRAWS = 500_000
CALIBRATION_SEED = 0
_CHUNK_ROWS = 100_000  # simulated comparisons per batch: bounded memory at many looks


def null_t_statistics(looks: tuple[int, ...], draws: int, seed: int) -> np.ndarray:
    """(draws, len(looks)) paired t statistics of simulated no-effect comparisons.

    Each comparison is max(looks) standard normal paired differences; look k sees the first
    n_k of them: T_k = mean / (SD / sqrt(n_k)), SD with n_k - 1 in the denominator (as
    analysis.decision's paired interval). float32: the boundary needs no more.
    """
    rng = np.random.default_rng(seed)
    n = np.array(looks)
    sizes = n.astype(float)
    out = np.empty((draws, len(n)), dtype=np.float32)
    for start in range(0, draws, _CHUNK_ROWS):
        rows = min(_CHUNK_ROWS, draws - start)
        d = rng.standard_normal((rows, int(n[-1])), dtype=np.float32).astype(float)  # float32: faster draws
        mean = np.cumsum(d, axis=1)[:, n - 1] / sizes
        squares = np.cumsum(d * d, axis=1)[:, n - 1]
        var = np.maximum(squares - sizes * mean * mean, 0.0) / (sizes - 1.0)
        out[start : start + len(d)] = mean / np.sqrt(var / sizes)
    return out


def crossings(t: np.ndarray, looks: tuple[int, ...], nominal: float) -> int:
    """How many rows of `t` cross the upper bound at some look at one-sided level `nominal`."""
    bounds = student_t.ppf(1.0 - nominal, np.array(looks) - 1).astype(np.float32)
    return int(np.count_nonzero((t > bounds).any(axis=1)))


@lru_cache(maxsize=64)
def pocock_confidence(looks: tuple[int, ...], confidence: float = CONFIDENCE) -> float:
    """The two-sided confidence every look uses so that the whole sequence's one-sided error is
    at most (1 - confidence) / 2 (module doc: calibrated on the t statistics). One look:
    `confidence` itself."""
    looks = check_looks(looks)
    if len(looks) == 1:
        return confidence
    alpha = (1.0 - confidence) / 2.0
    draws = CALIBRATION_DRAWS
    # Two Monte Carlo standard errors under alpha: the calibration's noise stays below it.
    allowed = int((alpha - 2.0 * math.sqrt(alpha * (1.0 - alpha) / draws)) * draws)
    t = null_t_statistics(looks, draws, CALIBRATION_SEED)
    low, high = alpha / len(looks) / 2.0, alpha  # Bonferroni's level crosses too rarely, alpha too often
    while high - low > 1e-7:
        middle = (low + high) / 2.0
        low, high = (middle, high) if crossings(t, looks, middle) <= allowed else (low, middle)
    return 1.0 - 2.0 * low


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

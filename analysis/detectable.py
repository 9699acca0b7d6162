"""What a paired comparison could detect: its power, the gain it finds at 80 %, the repeats it needs. Pure.

analysis/decision.py keeps a lever when the lower end of the ratio's paired t-interval lies above
1 + b (b the drift band). With n pairs whose log differences have sd s, and a true ratio r:

  (dbar - ln(1 + b)) / (s_hat / sqrt(n)) ~ noncentral t, n - 1 df, ncp = (ln r - ln(1 + b)) sqrt(n) / s
  power(r) = P(that > t_{1-a/2, n-1})          (scipy.stats.nct; exact for normal log differences)

detectable_gain: the gain g whose power is TARGET_POWER (80 %) at this n, s and b.
repeats_for:     the smallest n whose power at a gain g reaches TARGET_POWER (None beyond max_n).
spread_of:       s read back from an interval: (ln hi - ln lo) / 2 / t_{1-a/2, n-1} * sqrt(n).

Used where a figure is shown: the held-out confirmation says when its power was low (a figure
"confirmed" at low power reads high, being selected on clearing the band), and the advice for a
comparison with one repeat uses the session's own drift band, not the default noise model's.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.stats import nct

from analysis.decision import CONFIDENCE, t_quantile

TARGET_POWER = 0.80
MAX_REPEATS = 50


def _t(n: int, confidence: float) -> float:
    return t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1)


def power(ratio: float, sd: float, n: int, band: float, confidence: float = CONFIDENCE) -> float:
    """P(the rule calls a true `ratio` a real gain) with n pairs of log-difference sd `sd` (module doc)."""
    if n < 2 or not sd > 0 or math.isnan(band) or not ratio > 0:
        return math.nan
    ncp = (math.log(ratio) - math.log1p(band)) * math.sqrt(n) / sd
    return float(nct.sf(_t(n, confidence), n - 1, ncp))


def detectable_gain(
    sd: float, n: int, band: float, confidence: float = CONFIDENCE, target: float = TARGET_POWER
) -> float:
    """The relative gain (0.10 = +10 %) the rule finds with probability `target` (module doc)."""
    if n < 2 or not sd > 0 or math.isnan(band):
        return math.nan
    t = _t(n, confidence)
    ncp = brentq(lambda c: float(nct.sf(t, n - 1, c)) - target, 0.0, 200.0)
    return (1.0 + band) * math.exp(ncp * sd / math.sqrt(n)) - 1.0


def repeats_for(
    gain: float,
    sd: float,
    band: float,
    confidence: float = CONFIDENCE,
    target: float = TARGET_POWER,
    max_n: int = MAX_REPEATS,
) -> int | None:
    """The smallest n (>= 2) at which a true +`gain` is found with probability `target`; None if no
    n up to `max_n` does (a band at or above the gain: none ever does)."""
    if math.isnan(band) or math.log1p(gain) <= math.log1p(band):
        return None
    return next((n for n in range(2, max_n + 1) if power(1 + gain, sd, n, band, confidence) >= target), None)


def spread_of(lo: float, hi: float, n: int, confidence: float = CONFIDENCE) -> float:
    """The sd of the per-pair log differences behind a paired interval [lo, hi] over n pairs."""
    if n < 2 or not (lo > 0 and hi > 0) or math.isnan(lo) or math.isnan(hi):
        return math.nan
    return (math.log(hi) - math.log(lo)) / 2.0 / _t(n, confidence) * math.sqrt(n)

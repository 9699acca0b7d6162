"""One comparison of two throughputs as table columns, judged by analysis.decision's rule. Pure.

rel_diff        = ratio - 1, ratio = value / reference from the per-repeat values
                  (geometric means; paired by session and repeat where both exist)
ci_lo, ci_hi    = the ratio's two-sided t-interval (analysis.decision.CONFIDENCE)
n_value, n_reference, paired = the repeats behind it
label           = 'real gain' / 'real loss' / 'within noise' / 'not judged (n<2)' /
                  'not judged (drift unknown)'
beyond_drift    = the whole interval lies beyond the drift band (label is a real
                  gain or loss); None when not judged
drift_band_rel  = the band as applied (analysis.drift.drift_band, or band_by_lag at the
                  comparison's lag; NaN when unknown: not judged)
noise_terms     = the variance components the interval carries, each once (Judgement.noise_terms:
                  'launch+block', or 'launch+block+session' when unpaired sides span sessions)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from analysis.decision import CONFIDENCE, GAIN, LOSS, Band, Repeat, judge

FLAGS = ("beyond_drift", "paired")
JUDGEMENT_COLUMNS = ["rel_diff", "ci_lo", "ci_hi", "n_value", "n_reference", "paired", "label",
                     "beyond_drift", "drift_band_rel", "noise_terms", "verdict"]  # fmt: skip


def compare(
    value: Iterable[Repeat], reference: Iterable[Repeat], band_rel: Band, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """The comparison's columns (module doc) plus `verdict` in words (interval at `confidence`)."""
    j = judge(value, reference, band_rel, confidence)
    return {
        "rel_diff": j.ratio - 1.0,
        "ci_lo": j.lo,
        "ci_hi": j.hi,
        "n_value": j.n_value,
        "n_reference": j.n_reference,
        "paired": j.paired,
        "label": j.label,
        "beyond_drift": (j.label in (GAIN, LOSS)) if j.judged else None,
        "drift_band_rel": j.band,  # as applied: a ByLag band at the comparison's lag
        "noise_terms": j.noise_terms,
        "verdict": j.words() if not math.isnan(j.ratio) else "no reference",
    }


def typed_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """The verdict flags as nullable booleans (True / False / <NA> where not judged)."""
    present = [name for name in FLAGS if name in frame]
    return frame.astype(dict.fromkeys(present, "boolean"))

"""One comparison of two throughputs, judged against the drift band and the repeats' spread. Pure.

rel_diff        = value / reference - 1
beyond_drift    = |rel_diff| > band        (band: analysis.drift.drift_band; None when unknown)
repeats_spread  = MAD(value) + MAD(reference) in tok/s (MAD over each side's VALID repeats)
beyond_repeats  = |value - reference| > repeats_spread   (None when a side has fewer than 2 repeats)
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.stats import relative_diff

WITHIN, BEYOND, UNKNOWN = "within drift", "beyond drift", "drift unknown"


def drift_words(beyond: bool | None) -> str:
    """'beyond drift' / 'within drift' / 'drift unknown' (no anchor runs for a session involved)."""
    return UNKNOWN if beyond is None else (BEYOND if beyond else WITHIN)


def _finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def compare(
    value: float,
    reference: float,
    band_rel: float,
    mads: tuple[float, float] | None = None,
    repeats: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """The comparison's columns (module doc) plus `verdict` in words.

    mads and repeats are (value side, reference side); without mads the repeats'
    spread is not judged (e.g. for geometric means over corpora).
    """
    rel = relative_diff(value, reference)
    beyond_drift = bool(abs(rel) > band_rel) if _finite(rel) and _finite(band_rel) else None
    spread = math.nan
    beyond_repeats = None
    if mads is not None and min(repeats) >= 2 and _finite(rel):
        spread = float(mads[0] + mads[1])
        beyond_repeats = bool(abs(value - reference) > spread)
    band_text = f"band {band_rel:.1%}" if _finite(band_rel) else "no anchor runs"
    if beyond_repeats is None:
        repeats_text = "repeats' spread not judged (fewer than 2 repeats)" if mads is not None else ""
    else:
        repeats_text = ("beyond" if beyond_repeats else "within") + f" repeats' spread ({spread:,.1f} tok/s)"
    words = f"{rel:+.1%}: {drift_words(beyond_drift)} ({band_text})" if _finite(rel) else "no reference"
    return {
        "rel_diff": rel,
        "drift_band_rel": band_rel,
        "beyond_drift": beyond_drift,
        "repeats_spread_tok_per_s": spread,
        "beyond_repeats": beyond_repeats,
        "verdict": "; ".join(w for w in (words, repeats_text) if w),
    }


FLAGS = ("beyond_drift", "beyond_repeats")


def typed_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """The verdict flags as nullable booleans (True / False / <NA> where not judged)."""
    present = [name for name in FLAGS if name in frame]
    return frame.astype(dict.fromkeys(present, "boolean"))

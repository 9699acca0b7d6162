"""judge scales a lag-aware band by the comparison's own lag and says which noise terms it carries."""

import math

import pandas as pd

from analysis.decision import GAIN, LAUNCH_BLOCK, LAUNCH_BLOCK_SESSION, NO_BAND, NOISE, judge
from analysis.drift import band_by_lag, session_drift


def drift_of(values: list[float], session: str = "s") -> pd.DataFrame:
    positions = ["start", *[f"mid{i}" for i in range(1, len(values) - 1)], "end"]
    rows = [
        {"session_id": session, "anchor": p, "model": "m", "corpus": "c", "lever": "van", "k": 0,
         "output_tok_per_s": v, "valid": True}
        for p, v in zip(positions, values, strict=True)
    ]  # fmt: skip
    return session_drift(pd.DataFrame(rows))[0]


# A noisy trend: 5 anchor runs, bound about 0.22 over the session
DRIFT = drift_of([100.0, 112.0, 99.0, 108.0, 104.0])
LEVER = [("s", r, v) for r, v in enumerate([108.0, 109.5, 107.0, 110.0, 108.5])]
VAN = [("s", r, 100.0 + r % 2) for r in range(5)]


def test_a_paired_comparison_takes_the_band_at_its_lag():
    band = band_by_lag(DRIFT, {"s"})
    whole = band(1.0)
    assert 0.1 < whole < 0.5
    j = judge(LEVER, VAN, band)
    assert j.paired and j.lag == 0.2 and j.band == whole / 5
    assert j.noise_terms == LAUNCH_BLOCK and j.as_columns()["noise_terms"] == LAUNCH_BLOCK
    assert j.label == GAIN  # +8 %, tight: clears whole / 5, not the whole session's drift
    assert judge(LEVER, VAN, whole).label == NOISE


def test_an_unpaired_comparison_takes_the_whole_session_and_says_session_when_it_spans_two():
    band = band_by_lag(DRIFT, {"s", "t"})
    j = judge(LEVER, [("t", r, v) for _, r, v in VAN], band)
    assert not j.paired and j.lag == 1.0 and j.noise_terms == LAUNCH_BLOCK_SESSION
    assert math.isnan(j.band) and j.label == NO_BAND  # session t ran no anchor: fails closed


def test_unknown_drift_fails_closed_through_the_lag_band():
    j = judge(LEVER, VAN, band_by_lag(drift_of([100.0, 101.0], "other"), {"s"}))
    assert j.label == NO_BAND


def test_the_study_path_judges_a_paired_lever_at_its_lag():
    """analysis.final's walk and analysis.compare take the band at the comparison's lag, as the tune does."""
    from analysis.compare import compare
    from analysis.final import walk

    scores = pd.DataFrame(
        [{"lever": "van", "k": 0, "sessions": ("s",), "repeats": tuple(VAN)},
         {"lever": "suffix", "k": 8, "sessions": ("s",), "repeats": tuple(LEVER)}]
    )  # fmt: skip
    assert walk(scores, DRIFT)["lever"] == "suffix"
    row = compare(LEVER, VAN, band_by_lag(DRIFT, {"s"}))
    assert row["label"] == GAIN and row["drift_band_rel"] == band_by_lag(DRIFT, {"s"})(0.2)


def test_the_summary_judges_x_van_at_the_comparisons_lag_as_the_tune_does():
    """The summary's x van label is the study's: paired repeats in one session take the band at
    their lag, not the whole session's (which called this +8 % lever noise while Table 1 kept it)."""
    from analysis.summary import x_van

    cell = {"model": "m", "corpus": "c", "sessions": ("s",)}
    medians = pd.DataFrame(
        [{**cell, "lever": "van", "k": 0, "repeats": tuple(VAN)},
         {**cell, "lever": "suffix", "k": 8, "repeats": tuple(LEVER)}]
    )  # fmt: skip
    judged = x_van(medians, DRIFT)[("m", "c", "suffix", 8)]
    assert judged.label == GAIN and judged.band == band_by_lag(DRIFT, {"s"})(0.2)
    assert x_van(medians, None)[("m", "c", "suffix", 8)].label == NO_BAND

import math

import numpy as np
import pandas as pd
import pytest

from analysis.decision import t_quantile
from analysis.drift import (
    between_session_drift,
    drift_band,
    session_drift,
    split_anchors,
)


def anchors(rows):
    """rows: (session, position, tok/s, valid)"""
    return pd.DataFrame(
        [
            {"session_id": s, "anchor": pos, "model": "m", "corpus": "chat", "lever": "van", "k": 0,
             "output_tok_per_s": v, "valid": ok}
            for s, pos, v, ok in rows
        ]
    )  # fmt: skip


RUNS = anchors(
    [("s1", "start", 100.0, True), ("s1", "end", 104.0, True), ("s2", "start", 110.0, True),
     ("s2", "end", 110.0, True), ("s3", "start", 90.0, True), ("s3", "end", 50.0, False)]
)  # fmt: skip


def test_session_drift_is_range_over_mean_of_valid_anchor_runs():
    drift, excluded = session_drift(RUNS)
    assert excluded == 1
    by = drift.set_index("session_id")
    # |104 - 100| / ((100 + 104) / 2) = 4 / 102
    assert by.loc["s1", "drift_rel"] == pytest.approx(4 / 102)
    assert (by.loc["s1", "anchor_start_tok_per_s"], by.loc["s1", "anchor_end_tok_per_s"]) == (100.0, 104.0)
    assert by.loc["s2", "drift_rel"] == 0.0
    # one valid run left: no band
    assert by.loc["s3", "n_anchor_runs"] == 1 and math.isnan(by.loc["s3", "drift_rel"])


def test_band_is_max_of_within_and_between_session_drift():
    drift, _ = session_drift(RUNS)
    assert between_session_drift(drift, ["s1"]) == 0.0
    # means 102 and 110: (110 - 102) / 106
    assert between_session_drift(drift, ["s1", "s2"]) == pytest.approx(8 / 106)
    # one pair: |ln(104 / 100)| (was 4 / 102 before the band pooled anchor pairs)
    assert drift_band(drift, ["s1"]) == pytest.approx(math.log(1.04))
    assert drift_band(drift, ["s2"]) == 0.0
    assert drift_band(drift, ["s1", "s2"]) == pytest.approx(8 / 106)
    assert math.isnan(drift_band(drift, ["s1", "s3"]))  # s3's drift unknown
    assert math.isnan(drift_band(drift, ["nope"]))  # no anchor at all


def test_split_anchors_without_anchor_column_keeps_everything():
    cells = pd.DataFrame({"output_tok_per_s": [1.0]})
    measured, found = split_anchors(cells)
    assert len(measured) == 1 and found.empty
    measured, found = split_anchors(RUNS.assign(anchor=[None, "end", None, None, None, None]))
    assert len(measured) == 5 and len(found) == 1


def test_two_run_sessions_pool_their_pairs_and_three_run_sessions_fit_a_trend():
    runs = anchors(
        [("a", "start", 100.0, True), ("a", "mid1", 102.0, True), ("a", "end", 101.0, True),
         ("b", "start", 100.0, True), ("b", "end", 100.0, True), ("c", "start", 100.0, True),
         ("c", "end", 103.0, True)]
    )  # fmt: skip
    drift, _ = session_drift(runs)
    by = drift.set_index("session_id")
    assert by.loc["a", "n_anchor_pairs"] == 2 and by.loc["b", "n_anchor_pairs"] == 1
    # a: the line through u = 0, 0.5, 1; beta = ln(101/100), one residual df
    y = [math.log(v) for v in (100.0, 102.0, 101.0)]
    beta = y[2] - y[0]
    resid = y[1] - (y[0] + y[2]) / 2
    se = math.sqrt(resid**2 * 2 / 3 / 0.5)  # the residuals are (1, -2, 1) x resid / 3, rss = 2/3 resid^2
    assert by.loc["a", "anchor_trend"] == pytest.approx(beta)
    assert by.loc["a", "anchor_trend_se"] == pytest.approx(se)
    bound = abs(beta) + t_quantile(0.95, 1) * se
    assert drift_band(drift, ["a"]) == pytest.approx(bound)
    assert drift_band(drift, ["a"], lag=0.25) == pytest.approx(bound / 4)
    # two-run sessions keep the pair's root mean square whatever the lag (launch noise and drift in one)
    assert drift_band(drift, ["b", "c"], lag=0.25) == pytest.approx(
        max(math.sqrt(math.log(1.03) ** 2 / 2), 1.5 / 100.75)
    )
    assert math.isnan(drift_band(drift, ["a", "nope"]))


def test_time_orders_and_places_the_anchor_runs_where_every_run_records_its_window():
    runs = anchors([("a", "start", 100.0, True), ("a", "mid1", 110.0, True), ("a", "end", 120.0, True)])
    evenly = session_drift(runs)[0]["anchor_trend"].iloc[0]
    late_mid = session_drift(runs.assign(window_start_ns=[0, 9, 10]))[0]["anchor_trend"].iloc[0]
    assert evenly == pytest.approx(math.log(1.2))
    assert late_mid != pytest.approx(evenly)  # the middle run sits at u = 0.9, not 0.5


def simulated_bands(n_anchors: int, sessions: int, sigma: float, drift_ln: float, seed: int) -> pd.DataFrame:
    """session_drift's table of `sessions` simulated sessions: n anchor runs evenly over the session,
    ln tok/s = drift_ln x u + N(0, sigma) (launch noise), as grid/plan/anchor.py places them."""
    rng = np.random.default_rng(seed)
    positions = ["start", *[f"mid{i}" for i in range(1, n_anchors - 1)], "end"]
    rows = []
    for s in range(sessions):
        noise = rng.normal(0.0, sigma, n_anchors)
        for i, pos in enumerate(positions):
            u = i / (n_anchors - 1)
            rows.append((f"s{s:04d}", pos, 1000.0 * math.exp(drift_ln * u + noise[i]), True))
    return session_drift(anchors(rows))[0]


def test_the_band_of_a_driftless_session_shrinks_as_anchors_are_added():
    """11.8 % launch noise (the H200 spread), no drift: the band measures the drift's interval, so more
    anchor runs narrow it; the old band (root mean square of anchor pairs) stayed at sqrt(2) x 11.8 %."""
    medians, old = {}, {}
    for n in (3, 5, 9, 17):
        drift = simulated_bands(n, 400, 0.118, 0.0, seed=n)
        bands = [drift_band(drift, [s]) for s in drift["session_id"]]
        medians[n] = float(np.median(bands))
        old[n] = float(np.median(np.sqrt(drift["anchor_log_ss"] / drift["n_anchor_pairs"])))
    assert medians[3] > medians[5] > medians[9] > medians[17]
    assert medians[17] < 0.6 * medians[5]
    assert all(0.12 < old[n] < 0.18 for n in old)  # the pair RMS does not shrink: it is launch noise
    # Paired by repeat (5 repeats: lag 1/5), 9 anchors leave a band well under the pair RMS
    assert medians[9] / 5 < 0.6 * old[9]


@pytest.mark.parametrize("n_anchors", [3, 5, 9])
def test_a_session_with_real_drift_gets_a_band_that_covers_it(n_anchors):
    drift_ln = math.log(1.10)  # 10 % over the session, with the same 11.8 % launch noise
    drift = simulated_bands(n_anchors, 400, 0.118, drift_ln, seed=100 + n_anchors)
    bands = np.array([drift_band(drift, [s]) for s in drift["session_id"]])
    assert (bands >= drift_ln).mean() >= 0.93  # the 90 % interval's far end: misses <= 5 % (+ MC error)
    if n_anchors == 3:  # the start/end difference alone (two of the same runs) misses it a third of the time
        pair = np.abs(np.log(drift["anchor_end_tok_per_s"] / drift["anchor_start_tok_per_s"]))
        assert (pair >= drift_ln).mean() < 0.75
    lagged = np.array([drift_band(drift, [s], lag=0.2) for s in drift["session_id"]])
    assert (lagged >= 0.2 * drift_ln).mean() >= 0.93


def test_a_session_with_fewer_than_two_anchor_runs_is_not_judged_whatever_the_lag():
    runs = anchors([("a", "start", 100.0, True), ("a", "mid1", 50.0, False), ("a", "end", math.nan, True)])
    drift, _ = session_drift(runs)
    assert math.isnan(drift_band(drift, ["a"])) and math.isnan(drift_band(drift, ["a"], lag=0.1))


def test_an_unknown_two_run_term_beside_a_trend_session_leaves_the_band_unknown():
    # b's anchor ran VALID at 0 tok/s: its drift_rel is finite but it has no usable pair, so its term is
    # unknown; beside trend session a, max() would drop that NaN and judge on a's trend alone.
    runs = anchors(
        [("a", "start", 100.0, True), ("a", "mid1", 103.0, True), ("a", "end", 101.0, True),
         ("b", "start", 0.0, True), ("b", "end", 100.0, True)]
    )  # fmt: skip
    drift, _ = session_drift(runs)
    assert math.isnan(drift_band(drift, ["b"]))
    assert math.isnan(drift_band(drift, ["a", "b"]))

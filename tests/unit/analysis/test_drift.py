import math

import pandas as pd
import pytest

from analysis.drift import (
    between_session_drift,
    drift_band,
    normalise_by_anchor,
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


def test_normalise_by_anchor_maps_each_session_onto_the_reference():
    drift, _ = session_drift(RUNS)
    cells = pd.DataFrame({"session_id": ["s1", "s2"], "output_tok_per_s": [204.0, 220.0]})
    out = normalise_by_anchor(cells, drift)  # reference: s1 (first by id), anchor mean 102
    assert out["output_tok_per_s_norm"].tolist() == pytest.approx([204.0, 220.0 * 102 / 110])


def test_split_anchors_without_anchor_column_keeps_everything():
    cells = pd.DataFrame({"output_tok_per_s": [1.0]})
    measured, found = split_anchors(cells)
    assert len(measured) == 1 and found.empty
    measured, found = split_anchors(RUNS.assign(anchor=[None, "end", None, None, None, None]))
    assert len(measured) == 5 and len(found) == 1


def test_band_pools_every_anchor_pair_of_the_sessions():
    runs = anchors(
        [("a", "start", 100.0, True), ("a", "mid", 102.0, True), ("a", "end", 101.0, True),
         ("b", "start", 100.0, True), ("b", "end", 100.0, True)]
    )  # fmt: skip
    drift, _ = session_drift(runs)
    by = drift.set_index("session_id")
    assert by.loc["a", "n_anchor_pairs"] == 2 and by.loc["b", "n_anchor_pairs"] == 1
    ss = math.log(1.02) ** 2 + math.log(101 / 102) ** 2
    assert drift_band(drift, ["a"]) == pytest.approx(math.sqrt(ss / 2))
    # b's pair (no drift) is pooled in rather than the worst session taken; anchor means 101 and 100
    assert drift_band(drift, ["a", "b"]) == pytest.approx(max(math.sqrt(ss / 3), 1 / 100.5))

"""Variance components (analysis/variance.py): injected block, launch and session sds come back out."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from analysis.variance import NO_LAUNCH_IDS, display_rows, variance_components
from tests.unit.analysis.launch_store import Design, cells_frame

ONE_LEVER = (("suffix", 8, 1.0),)


def components(design, seed=0):
    (row,) = variance_components(cells_frame(design, seed)).to_dict("records")
    return row


@pytest.mark.parametrize(
    "sds",
    [
        {"block": 0.02, "launch": 0.08, "session": 0.03},  # host-bound: launches dominate
        {"block": 0.08, "launch": 0.03, "session": 0.02},  # blocks dominate: their share must come off
    ],
)
def test_the_injected_components_are_recovered_on_average(sds):
    # Method of moments is unbiased for the variances: their mean over 40 stores lands on the injection.
    design = Design(
        sessions=20,
        launches=4,
        blocks=6,
        van=False,
        shared=ONE_LEVER,
        sd_lever=0.0,
        **{f"sd_{level}": sd for level, sd in sds.items()},
    )
    rows = [components(design, seed) for seed in range(40)]
    for level, tolerance in (("block", 0.05), ("launch", 0.2), ("session", 0.4)):
        mean_var = np.mean([row[f"sd_{level}"] ** 2 for row in rows])
        assert mean_var == pytest.approx(sds[level] ** 2, rel=tolerance), level


def test_one_large_store_recovers_each_sd_with_its_df():
    design = Design(sessions=40, launches=4, blocks=6, van=False, shared=ONE_LEVER, sd_lever=0.0)
    row = components(design, seed=29)
    assert row["sd_block"] == pytest.approx(0.02, rel=0.1)
    assert row["sd_launch"] == pytest.approx(0.08, rel=0.2)
    assert 0.015 < row["sd_session"] < 0.05
    assert row["sd_run"] == pytest.approx(math.hypot(0.02, 0.08), rel=0.2)
    # 960 blocks, 3 corpus means, 40 sessions, 160 launches: df 960 - 3 - 39 - 120, 120, 39
    assert (row["df_block"], row["df_launch"], row["df_session"]) == (798, 120, 39)
    assert (row["n_blocks"], row["n_launches"], row["n_sessions"], row["n_corpora"]) == (960, 160, 40, 3)
    assert row["notes"] == ""


def test_corpus_means_are_removed_and_unbalanced_stores_still_work():
    # Corpora 10x apart: without removing their means the block sd would read ~80 %.
    design = Design(sessions=40, launches=4, blocks=6, van=False, shared=ONE_LEVER, sd_lever=0.0)
    cells = cells_frame(design, seed=29).sample(frac=0.7, random_state=1)
    (row,) = variance_components(cells).to_dict("records")
    assert row["sd_block"] == pytest.approx(0.02, rel=0.15)
    assert row["sd_launch"] == pytest.approx(0.08, rel=0.25)


def test_one_launch_leaves_between_launch_and_session_missing_with_the_reason():
    row = components(Design(sessions=1, launches=1, blocks=8, van=False, shared=ONE_LEVER))
    assert row["sd_block"] == pytest.approx(0.02, rel=0.6) and row["df_block"] == 8 - 3
    assert math.isnan(row["sd_launch"]) and row["df_launch"] == 0
    assert math.isnan(row["sd_session"]) and math.isnan(row["sd_run"])
    assert "launch: one launch per session" in row["notes"] and "session: one session" in row["notes"]
    text = display_rows(variance_components(cells_frame(Design(sessions=1, launches=1, blocks=8))))
    assert text[0][4] == "-" and "one launch per session" in text[0][8]


def test_one_block_per_launch_gives_the_per_run_sd_but_not_its_parts():
    row = components(
        Design(sessions=3, launches=30, blocks=1, van=False, shared=ONE_LEVER, corpora=("chat",))
    )
    assert math.isnan(row["sd_block"]) and math.isnan(row["sd_launch"])
    assert "block: one block per launch" in row["notes"] and "not separable" in row["notes"]
    assert row["sd_run"] == pytest.approx(math.hypot(0.02, 0.08), rel=0.25)
    assert row["df_run"] == 87


def test_invalid_cells_are_left_out():
    design = Design(sessions=2, launches=3, blocks=4, van=False, shared=ONE_LEVER)
    cells = cells_frame(design)
    spoiled = pd.concat([cells, cells.iloc[[0]].assign(cell_key="bad", output_tok_per_s=1e6, valid=False)])
    assert variance_components(spoiled).equals(variance_components(cells))


def test_a_store_without_launch_ids_has_no_components():
    cells = cells_frame(Design()).drop(columns=["engine_launch_id"])
    table = variance_components(cells)
    assert table.empty and table.attrs["note"] == NO_LAUNCH_IDS


def test_the_per_run_sd_s_interval_holds_the_truth_at_two_launches():
    # 2 launches x 10 blocks, 11.8 % launch and 10 % block sd (the H200 spread): one launch df.
    design = Design(
        sessions=1, launches=2, blocks=10, van=False, shared=ONE_LEVER, sd_lever=0.0, sd_launch=0.118,
        sd_block=0.10, sd_session=0.0,
    )  # fmt: skip
    truth = math.hypot(0.118, 0.10)
    rows = [components(design, seed) for seed in range(150)]
    # At 1,000 stores: 89.9 % held, the upper end above the truth 95.9 %.
    assert np.mean([r["sd_run_lo"] <= truth <= r["sd_run_hi"] for r in rows]) >= 0.85
    assert np.mean([truth <= r["sd_run_hi"] for r in rows]) >= 0.92
    # A chi-square on the Satterthwaite df alone held it 75.2 % of the time.
    satterthwaite = [
        r["sd_run"] * math.sqrt(r["df_run"] / chi2.ppf(0.05, r["df_run"])) >= truth for r in rows
    ]
    assert np.mean(satterthwaite) < 0.85
    words = display_rows(variance_components(cells_frame(design, 0)))[0][6]
    assert words.endswith(f"[{rows[0]['sd_run_lo']:.1%}, {rows[0]['sd_run_hi']:.1%}]")

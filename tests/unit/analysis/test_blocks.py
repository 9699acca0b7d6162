"""Levers sharing a launch, paired by block (analysis/blocks.py): an injected ratio, its interval with
the launch as the cluster, and the order (carry-over) check."""

import math

import numpy as np
import pandas as pd
import pytest

from analysis.blocks import (
    OVER_BLOCKS,
    OVER_LAUNCHES,
    block_ratios,
    display_rows,
    interval,
    pair_row,
    paired_by_block,
)
from tests.unit.analysis.launch_store import Design, cells_frame

SHARED = "suffix-k8+bestkpad-k8+dynk-k8"


def pair(table, lever, reference):
    rows = table[(table["lever"] == lever) & (table["reference"] == reference)]
    assert len(rows) == 1, table[["lever", "reference"]]
    return rows.iloc[0]


def test_an_injected_ratio_is_recovered_and_its_interval_covers_it():
    # The launch sd (8 %) is 16x the within-block noise: only pairing inside a block sees 1.10 this tightly.
    table = paired_by_block(cells_frame(Design(sessions=1, launches=4, blocks=6), seed=3))
    row = pair(table, "bestkpad-k8", "suffix-k8")
    assert row["launch_config"] == SHARED
    assert (row["n_blocks"], row["n_launches"], row["n_sessions"]) == (24, 4, 1)
    assert (row["interval_over"], row["df"]) == (OVER_LAUNCHES, 3)
    assert row["ratio"] == pytest.approx(1.10, rel=0.01)
    assert row["ci_lo"] < 1.10 < row["ci_hi"] and row["ci_hi"] / row["ci_lo"] < 1.02
    assert len(row["ratios"]) == 24 and len(row["launch_ratios"]) == 4
    assert pair(table, "dynk-k8", "suffix-k8")["ratio"] == pytest.approx(1.05, rel=0.01)
    assert not table["reference"].eq("van").any()  # van ran on launches of its own: never paired


def drawn_pair(rng, launches, blocks, sd_within, sd_interaction, truth=1.10):
    """block_ratios' rows of one pair, drawn: ln ratio = ln truth + u_launch + e_block, in ABBA order.

    u_launch ~ N(0, sd_interaction^2) (a lever x launch interaction), e_block ~ N(0, sd_within^2)."""
    u = rng.normal(0.0, sd_interaction, launches)
    logs = math.log(truth) + np.repeat(u, blocks) + rng.normal(0.0, sd_within, launches * blocks)
    return pd.DataFrame(
        {
            "session_id": "s",
            "launch": np.repeat([f"s/e{i}" for i in range(launches)], blocks),
            "ratio": np.exp(logs),
            "lever_second": np.tile(np.arange(blocks) % 2 == 0, launches).astype(float),
        }
    )


def coverage(launches, blocks, sd_within, sd_interaction, draws, seed=0, truth=1.10):
    """Share of draws whose 95 % interval holds the truth: (pair_row's, blocks as independent)."""
    rng = np.random.default_rng(seed)
    clustered, naive = [], []
    for _ in range(draws):
        group = drawn_pair(rng, launches, blocks, sd_within, sd_interaction, truth)
        row = pair_row(group)
        clustered.append(row["ci_lo"] < truth < row["ci_hi"])
        _, lo, hi = interval(np.log(group["ratio"].to_numpy()))  # every block independent: the old interval
        naive.append(lo < truth < hi)
    return np.mean(clustered), np.mean(naive)


def test_the_95_percent_interval_covers_about_95_percent_of_the_time_from_the_store_s_cells():
    design = Design(sessions=1, launches=2, blocks=3, van=False, sd_lever=0.02)
    covered = []
    for seed in range(40):
        row = pair(paired_by_block(cells_frame(design, seed)), "bestkpad-k8", "suffix-k8")
        covered.append(row["ci_lo"] < 1.10 < row["ci_hi"])
    assert 0.88 <= np.mean(covered) <= 1.0


@pytest.mark.parametrize(("launches", "blocks", "sd_within"), [(2, 10, 0.10), (3, 6, 0.03)])
def test_a_lever_x_launch_interaction_keeps_the_coverage(launches, blocks, sd_within):
    # The ratio moves 5 % (sd) from launch to launch and sd_within from block to block. At 10,000 draws:
    # 95.4 % and 95.2 % covered; the interval over blocks 76.0 % and 57.6 %.
    clustered, naive = coverage(launches, blocks, sd_within, sd_interaction=0.05, draws=600)
    assert clustered >= 0.93
    assert naive < 0.85  # what the interval over blocks covered


def test_the_interval_is_the_launch_means_t_interval():
    group = drawn_pair(np.random.default_rng(1), 3, 4, 0.03, 0.05)
    means = [np.log(g["ratio"]).mean() for _, g in group.groupby("launch")]  # balanced ABBA: plain means
    row = pair_row(group)
    _, lo, hi = interval(np.array(means))
    assert (row["ci_lo"], row["ci_hi"]) == pytest.approx((lo, hi), rel=1e-12)
    assert (row["df"], row["interval_over"]) == (2, OVER_LAUNCHES)


def test_one_launch_says_its_interval_has_no_launch_term():
    table = paired_by_block(cells_frame(Design(sessions=1, launches=1, blocks=8, van=False), seed=2))
    row = pair(table, "bestkpad-k8", "suffix-k8")
    assert (row["interval_over"], row["df"], row["n_launches"]) == (OVER_BLOCKS, 6, 1)  # order takes 1 df
    assert row["ci_lo"] < 1.10 < row["ci_hi"]
    assert math.isnan(row["sd_lever_launch"])
    words = display_rows(table[(table["lever"] == "bestkpad-k8") & (table["reference"] == "suffix-k8")])[0]
    assert words[4] == "one launch's blocks: no launch term (6)"


def test_a_one_sided_carry_over_is_estimated_and_flagged():
    # The cell right after suffix gains 5 %: bestkpad in A B blocks, never in B A ones.
    design = Design(sessions=1, launches=2, blocks=10, van=False, sd_lever=0.005, carry=0.05)
    table = paired_by_block(cells_frame(design, seed=4))
    carried = pair(table, "bestkpad-k8", "suffix-k8")
    assert carried["order_effect"] == pytest.approx(math.exp(0.05), rel=0.01)
    assert carried["order_lo"] > 1.0 and carried["order_df"] == 20 - 2 - 1
    # The ratio carries half of it: no ABBA design can remove a one-sided carry-over.
    assert carried["ratio"] == pytest.approx(1.10 * math.exp(0.025), rel=0.01)
    clean = pair(table, "dynk-k8", "suffix-k8")
    assert clean["order_lo"] < 1.0 < clean["order_hi"]
    rows = {r[2]: r for r in display_rows(table)}
    assert rows["bestkpad-k8 / suffix-k8"][7].endswith(" !")
    assert not rows["dynk-k8 / suffix-k8"][7].endswith("!")


def test_a_period_effect_cancels_in_the_ratio_even_with_unbalanced_orders():
    # 5 blocks: bestkpad after suffix in 3, before in 2; whatever runs later gains 4 % per position.
    design = Design(sessions=1, launches=1, blocks=5, van=False, sd_lever=0.002, period=0.04)
    ratios = block_ratios(cells_frame(design, seed=6))
    ratios = ratios[(ratios["lever"] == "bestkpad-k8") & (ratios["reference"] == "suffix-k8")]
    assert list(ratios.sort_values("block")["lever_second"]) == [1.0, 0.0, 1.0, 0.0, 1.0]
    row = pair(paired_by_block(cells_frame(design, seed=6)), "bestkpad-k8", "suffix-k8")
    assert row["ratio"] == pytest.approx(1.10, rel=0.005)
    assert np.exp(np.log(ratios["ratio"]).mean()) > 1.10 * math.exp(0.006)  # the plain mean reads high
    assert row["order_effect"] == pytest.approx(math.exp(0.08), rel=0.01)


def test_without_the_cells_order_the_order_effect_is_missing_not_zero():
    cells = cells_frame(Design(sessions=1, launches=2, blocks=4), seed=1).drop(columns=["engine_cell_index"])
    row = pair(paired_by_block(cells), "bestkpad-k8", "suffix-k8")
    assert math.isnan(row["order_effect"]) and row["ratio"] == pytest.approx(1.10, rel=0.01)
    assert display_rows(paired_by_block(cells))[0][7].startswith("- (order not recorded")


def test_without_a_block_column_the_repeat_is_the_block():
    with_blocks = paired_by_block(cells_frame(Design(), seed=5))
    without = paired_by_block(cells_frame(Design(block_column=False), seed=5))
    assert without[["ratio", "ci_lo", "ci_hi", "n_blocks"]].equals(
        with_blocks[["ratio", "ci_lo", "ci_hi", "n_blocks"]]
    )


def test_an_invalid_cell_drops_its_block_from_the_pair_but_not_its_launch_from_the_group():
    cells = cells_frame(Design(sessions=1, launches=2, blocks=4), seed=1)
    first = cells.index[(cells["lever"] == "bestkpad") & (cells["engine_launch_id"] == "e0-0")][0]
    cells.loc[first, "valid"] = False
    ratios = block_ratios(cells)
    assert set(ratios["launch_config"]) == {SHARED}
    assert pair(paired_by_block(cells), "bestkpad-k8", "suffix-k8")["n_blocks"] == 7


def test_levers_on_launches_of_their_own_give_no_pairs():
    assert paired_by_block(cells_frame(Design(shared=(("suffix", 8, 1.0),)))).empty
    assert paired_by_block(cells_frame(Design()).drop(columns=["engine_launch_id"])).empty

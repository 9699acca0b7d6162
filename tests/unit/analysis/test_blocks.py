"""Levers sharing a launch, paired by block (analysis/blocks.py): an injected ratio and its interval."""

import numpy as np
import pytest

from analysis.blocks import block_ratios, paired_by_block
from tests.unit.analysis.launch_store import Design, cells_frame

SHARED = "suffix-k8+bestkpad-k8+dynk-k8"


def pair(table, lever, reference):
    rows = table[(table["lever"] == lever) & (table["reference"] == reference)]
    assert len(rows) == 1, table[["lever", "reference"]]
    return rows.iloc[0]


def test_an_injected_ratio_is_recovered_and_its_interval_covers_it():
    # The launch sd (8 %) is 16x the within-block noise: only pairing inside a block sees 1.10 this tightly.
    table = paired_by_block(cells_frame(Design(sessions=1, launches=2, blocks=6), seed=3))
    row = pair(table, "bestkpad-k8", "suffix-k8")
    assert row["launch_config"] == SHARED
    assert (row["n_blocks"], row["n_launches"], row["n_sessions"]) == (12, 2, 1)
    assert row["ratio"] == pytest.approx(1.10, rel=0.01)
    assert row["ci_lo"] < 1.10 < row["ci_hi"] and row["ci_hi"] / row["ci_lo"] < 1.02
    assert len(row["ratios"]) == 12 and len(row["launch_ratios"]) == 2
    assert pair(table, "dynk-k8", "suffix-k8")["ratio"] == pytest.approx(1.05, rel=0.01)
    assert not table["reference"].eq("van").any()  # van ran on launches of its own: never paired


def test_the_95_percent_interval_covers_about_95_percent_of_the_time():
    design = Design(sessions=1, launches=2, blocks=3, van=False, sd_lever=0.02)
    covered = []
    for seed in range(200):
        row = pair(paired_by_block(cells_frame(design, seed)), "bestkpad-k8", "suffix-k8")
        covered.append(row["ci_lo"] < 1.10 < row["ci_hi"])
    assert 0.90 <= np.mean(covered) <= 0.99


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

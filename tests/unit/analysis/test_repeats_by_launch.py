"""Repeats that share an engine launch are judged by launch, wherever the store's repeats are judged.

grid.launches_per_argv below grid.repeats puts repeat r on launch r mod L (grid/config/expand.py): the
repeats of one launch share its offset. analysis.medians.repeat_values gives one value per launch
there, so every judge over lever_medians' repeats (summary's x van, Table 1, compare, the tune)
pairs launch with launch.
"""

import math

import numpy as np
import pandas as pd
import pytest

from analysis.decision import judge
from analysis.medians import lever_medians, repeat_values
from analysis.summary import x_van

SD_LAUNCH, SD_BLOCK = 0.118, 0.10  # the H200's host-bound spread (issue 44)


def null_grid(draws: int, repeats: int, launches: int, seed: int = 44) -> pd.DataFrame:
    """`draws` independent van/suffix grids (one model each), the lever doing nothing: repeat r on
    launch r % launches of its lever's own launches, as the grid places them."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(draws):
        for lever in ("van", "suffix"):
            offsets = rng.normal(0.0, SD_LAUNCH, launches)
            for r in range(repeats):
                rows.append({
                    "session_id": "s", "model": f"m{d}", "corpus": "code", "lever": lever,
                    "k": 0 if lever == "van" else 8, "repeat": r, "valid": True,
                    "engine_launch_id": f"{lever}-{d}-{r % launches}",
                    "output_tok_per_s": 1000.0 * math.exp(offsets[r % launches] + rng.normal(0.0, SD_BLOCK)),
                })  # fmt: skip
    return pd.DataFrame(rows)


def keep_rate(frame: pd.DataFrame) -> float:
    """How often the lever is judged a real gain over van (band 0: the band only makes it stricter)."""
    medians, _ = lever_medians(frame)
    by = {(row.model, row.lever): row.repeats for row in medians.itertuples()}
    models = sorted({m for m, _ in by})
    return float(np.mean([judge(by[(m, "suffix")], by[(m, "van")], 0.0).real_gain for m in models]))


def test_a_lever_that_does_nothing_is_kept_at_most_5_percent_when_launches_hold_several_repeats():
    # 6 repeats on 2 launches per argv: pairing the repeats as independent kept it ~20 % of the time.
    rate = keep_rate(null_grid(draws=600, repeats=6, launches=2))
    assert rate <= 0.075  # 5 % nominal; binomial sd 0.9 % at 600 draws


def test_the_launch_means_pair_van_launch_j_with_the_levers_launch_j():
    frame = null_grid(draws=1, repeats=6, launches=3)
    medians, _ = lever_medians(frame)
    by = {row.lever: row.repeats for row in medians.itertuples()}
    assert [r for _, r, _ in by["van"]] == [0, 1, 2] == [r for _, r, _ in by["suffix"]]
    van = frame[frame["lever"] == "van"]
    launch0 = van[van["repeat"] % 3 == 0]["output_tok_per_s"]
    assert by["van"][0][2] == pytest.approx(math.exp(np.log(launch0).mean()))
    j = judge(by["suffix"], by["van"], 0.0)
    assert j.paired and j.n_value == 3


def test_a_launch_per_repeat_keeps_every_repeat():
    frame = null_grid(draws=1, repeats=4, launches=4)
    values = repeat_values(frame[frame["lever"] == "van"])
    assert [r for _, r, _ in values] == [0, 1, 2, 3]
    assert [v for *_, v in values] == pytest.approx(list(frame[frame["lever"] == "van"]["output_tok_per_s"]))


def test_a_store_without_launch_ids_is_read_as_before():
    frame = null_grid(draws=1, repeats=6, launches=2).drop(columns="engine_launch_id")
    values = repeat_values(frame[frame["lever"] == "van"])
    assert [r for _, r, _ in values] == list(range(6))


def test_summary_x_van_counts_launch_pairs():
    frame = null_grid(draws=1, repeats=6, launches=2)
    judged = x_van(lever_medians(frame)[0])
    (j,) = judged.values()
    assert j.n_value == 2 and j.paired

"""Van against a lever on shared launches: pair launch with launch (their means), not block with block."""

import math

import numpy as np
import pytest

from analysis.decision import LAUNCH_BLOCK, judge, judge_by_launch, launch_means


def draw(
    rng: np.random.Generator, launches: int, blocks: int, sd_launch: float, sd_block: float, gain: float
):
    """(lever repeats, van repeats): repeat r on launch r % launches, as grid/config/expand.py places them."""
    sides = []
    for effect in (gain, 0.0):
        offsets = rng.normal(0.0, sd_launch, launches)
        reps = launches * blocks
        sides.append([("s", r, math.exp(5 + effect + offsets[r % launches] + rng.normal(0, sd_block)))
                      for r in range(reps)])  # fmt: skip
    return sides


def coverage(judger, draws: int = 600) -> float:
    rng = np.random.default_rng(37)
    hits = 0
    for _ in range(draws):
        lever, van = draw(rng, 4, 4, 0.118, 0.05, math.log(1.1))
        j = judger(lever, van)
        hits += j.lo <= 1.1 <= j.hi
    return hits / draws


def test_launch_pairs_hold_their_confidence_where_block_pairs_do_not():
    by_launch = coverage(lambda a, b: judge_by_launch(a, b, 0.0, launches=4))
    by_block = coverage(lambda a, b: judge(a, b, 0.0))
    assert by_launch >= 0.86  # 90 % interval, 600 draws
    assert by_block < 0.75  # 16 block pairs treated as independent: far too narrow


def test_launch_means_group_repeats_by_launch_and_keep_the_noise_terms():
    reps = [("s", r, v) for r, v in enumerate([100.0, 200.0, 400.0, 800.0])]
    assert launch_means(reps, 2) == (("s", 0, pytest.approx(200.0)), ("s", 1, pytest.approx(400.0)))
    lever = [("s", r, 110.0 + r) for r in range(6)]
    van = [("s", r, 100.0 + r % 2) for r in range(6)]
    j = judge_by_launch(lever, van, 0.0, launches=3)
    assert j.paired and j.n_value == 3 and j.noise_terms == LAUNCH_BLOCK and j.lag == pytest.approx(1 / 3)
    one = judge_by_launch(lever, van, 0.0, launches=6)
    assert (one.lo, one.hi) == pytest.approx((judge(lever, van, 0.0).lo, judge(lever, van, 0.0).hi))

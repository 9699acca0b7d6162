"""Launches against blocks per launch from the variance components (Kalibera & Jones's choice)."""

import math

import pytest

from analysis.decision import t_quantile
from grid.plan.groups import launch_split, main


def test_a_dominant_launch_term_buys_launches_and_a_small_one_buys_blocks():
    launchy = launch_split(sd_launch=0.118, sd_block=0.03, start_s=120, block_s=30, half_width=0.05)
    blocky = launch_split(sd_launch=0.01, sd_block=0.10, start_s=120, block_s=30, half_width=0.05)
    assert launchy.blocks == 1 and launchy.launches > 20
    assert blocky.blocks >= 5 and blocky.launches < 10
    for split in (launchy, blocky):
        assert split.half_width <= 0.05
        per = (
            2 * (0.118**2 + 0.03**2 / split.blocks)
            if split is launchy
            else 2 * (0.01**2 + 0.1**2 / split.blocks)
        )
        assert split.se_ln_ratio == pytest.approx(math.sqrt(per / split.launches))


def test_the_choice_is_the_cheapest_that_reaches_the_width():
    best = launch_split(0.05, 0.08, 200, 20, 0.04)
    # every other block count at its fewest launches costs at least as much
    for blocks in range(1, 17):
        for launches in range(2, 500):
            se = math.sqrt(2 * (0.05**2 + 0.08**2 / blocks) / launches)
            if t_quantile(0.95, launches - 1) * se <= 0.04:
                assert 2 * launches * (200 + blocks * 20) >= best.gpu_s - 1e-9
                break
    # near the continuous optimum sqrt(start sd_block^2 / (block sd_launch^2)) = 5.06
    assert abs(best.blocks - math.sqrt(200 * 0.08**2 / (20 * 0.05**2))) <= 2


def test_bad_input_is_one_line(capsys):
    assert main(["--sd-launch", "-1", "--sd-block", "0.1", "--start-s", "1", "--block-s", "1",
                 "--half-width", "0.1"]) == 2  # fmt: skip
    assert "sd_launch must be a finite number >= 0" in capsys.readouterr().out
    assert main(["--start-s", "1", "--block-s", "1", "--half-width", "0.1"]) == 2
    assert "give --sd-launch and --sd-block" in capsys.readouterr().out


def test_the_sds_come_from_the_store_s_variance_components(tmp_path, capsys):
    from tests.unit.analysis.launch_store import Design, write_store

    store = write_store(tmp_path / "store", Design(sd_launch=0.10, sd_block=0.02, launches=4, blocks=4))
    argv = ["--store", str(store), "--model", "smol", "--levers", "van", "suffix", "--start-s", "120",
            "--block-s", "30", "--half-width", "0.1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "sd_launch" in out and "van k0" in out and "suffix k8" in out and "launches per side x" in out
    assert main([*argv[:5], "nope", *argv[7:]]) == 2  # no such lever: one line, no split
    assert "no variance components for ['nope']" in capsys.readouterr().out


def test_a_store_path_that_does_not_exist_is_one_line_naming_it(tmp_path, capsys):
    missing = tmp_path / "no-such-store"
    argv = ["--store", str(missing), "--start-s", "60", "--block-s", "30", "--half-width", "0.05"]
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert f"--store {missing} does not exist" in out and len(out.strip().splitlines()) == 1
    assert not missing.exists()

"""Issue 45 item 2: `experiment=../../<path>` loaded any YAML file as an experiment and launched.

An experiment (and an engine, load or cluster) is named, never given as a path: shipped in conf/ or
in the user's own folder (hydra.searchpath / LEVER_GRID_CONF), which the refusal says how to use.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from grid.__main__ import main
from grid.config.compose import CONF_DIR, compose_config
from vocab.errors import ConfigError

EXPERIMENT = "# @package _global_\nname: stray\ngrid:\n  models: [tiny]\n  levers: [van]\n  corpora: [chat]\n"


def stray_yaml(tmp_path: Path) -> str:
    """A YAML file outside conf/, as `experiment=` would reach it from conf/experiment/."""
    (tmp_path / "stray.yaml").write_text(EXPERIMENT)
    return os.path.relpath(tmp_path / "stray", CONF_DIR / "experiment")


def test_an_experiment_given_as_a_relative_path_is_refused_with_the_way_to_add_one(tmp_path):
    value = stray_yaml(tmp_path)
    with pytest.raises(ConfigError) as info:
        compose_config([f"experiment={value}"])
    line = str(info.value)
    assert "\n" not in line
    assert line.startswith(f"experiment '{value}' is a path"), line
    assert "hydra.searchpath=[file:///my/conf]" in line and "LEVER_GRID_CONF" in line
    assert "smoke" in line  # the known experiments are named


@pytest.mark.parametrize("value", ["/etc/x", "../experiment/smoke", "sub/smoke", "..", "a\\b"])
def test_path_like_experiments_are_refused(value):
    with pytest.raises(ConfigError, match=f"^experiment '{re.escape(value)}' is a path"):
        compose_config([f"experiment='{value}'"])


@pytest.mark.parametrize("group", ["cluster", "engine", "load"])
def test_the_other_config_groups_take_names_too(group):
    with pytest.raises(ConfigError, match=f"^{group} '../{group}/x' is a path"):
        compose_config([f"{group}=../{group}/x"])


def test_the_command_line_says_it_in_one_line_and_exits_2(tmp_path, capsys):
    assert main(["plan", f"experiment={stray_yaml(tmp_path)}"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: experiment '") and "hydra.searchpath" in line


def test_a_searchpath_experiment_is_taken_by_name(tmp_path):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(EXPERIMENT.replace("stray", "mine"))
    cfg = compose_config([f"hydra.searchpath=[file://{tmp_path}]", "experiment=mine"])
    assert cfg.name == "mine"

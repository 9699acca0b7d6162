"""One stage order (analysis/final.py PROCEDURE): the tune runs its stages in it, the study's walk
takes its levers in it, and each stage's lever is a lever of conf/lever."""

from analysis.final import STAGE_LEVER, STAGE_ORDER
from experiments.tune import STAGES
from vocab.paths import project_path


def test_the_tune_and_the_walk_share_one_stage_order():
    assert STAGES == ("van", "suffix", "kpad", "best_k", "w4a4", "dynk", "confirm")
    assert STAGE_ORDER == ("van", "suffix", "bestkpad", "w4a4", "dynk")
    assert STAGE_LEVER["kpad"] == "bestkpad"  # the stage and the lever it proposes have different names


def test_every_stage_proposes_a_lever_the_conf_defines():
    levers = {path.stem for path in project_path("conf/lever").glob("*.yaml")}
    assert set(STAGE_ORDER) <= levers

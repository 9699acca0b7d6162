import pytest

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.anchor import anchor_cells
from vocab.errors import ConfigError


def config(*overrides):
    return to_config(compose_config(["experiment=smoke", *overrides]))


def test_default_anchor_is_van_on_the_first_model_and_corpus_at_both_ends():
    start, end = anchor_cells(config())
    assert (start.anchor, end.anchor) == ("start", "end")
    for cell in (start, end):
        assert (cell.engine_spec.model.name, cell.engine_spec.lever.name, cell.corpus.name) == (
            "tiny",
            "van",
            "code_complete",
        )
    # Distinct from each other and from the grid's own van cell: all three are stored.
    grid_keys = {c.key for c in expand(config())}
    assert len({start.key, end.key} | grid_keys) == len(grid_keys) + 2
    assert start.label.endswith("/anchor-start")


def test_anchor_can_be_moved_or_turned_off():
    start, _ = anchor_cells(config("grid.anchor.corpus=chat_bench", "grid.anchor.lever=suffix"))
    assert (start.corpus.name, start.engine_spec.lever.name, start.engine_spec.k) == (
        "chat_bench",
        "suffix",
        8,
    )
    assert anchor_cells(config("grid.anchor.enabled=false")) is None


def test_an_anchor_that_changes_the_model_is_refused():
    with pytest.raises(ConfigError, match="lossless"):
        anchor_cells(config("grid.anchor.lever=w4a4"))


def test_an_unknown_anchor_name_is_a_config_error():
    with pytest.raises(ConfigError):
        anchor_cells(config("grid.anchor.corpus=nope"))


def test_more_anchor_runs_go_between_the_launches_and_keep_start_and_end_keys():
    from grid.plan.anchor import anchored_phases
    from grid.plan.cost import launch_order
    from grid.plan.groups import group_by_engine

    cfg = config("grid.anchor.runs=5", "grid.repeats=4")
    anchors = anchor_cells(cfg)
    assert [a.anchor for a in anchors] == ["start", "mid1", "mid2", "mid3", "end"]
    two = anchor_cells(config("grid.repeats=4"))
    assert (anchors[0].key, anchors[-1].key) == (two[0].key, two[1].key)  # stores resume
    assert len({a.key for a in anchors}) == 5
    launches = launch_order(group_by_engine(expand(cfg)), cfg.plan)
    phases = anchored_phases(launches, anchors)
    assert [p[0].cells[0].anchor for p in phases[::2]] == ["start", "mid1", "mid2", "mid3", "end"]
    middle = [len(p) for p in phases[1::2]]
    assert sum(middle) == len(launches) and max(middle) - min(middle) <= 1
    assert [g for p in phases[1::2] for g in p] == launches  # the launches keep their order
    assert anchored_phases(launches, None) == [launches]


def test_fewer_than_two_anchor_runs_is_one_clear_error():
    with pytest.raises(ConfigError, match=r"grid\.anchor\.runs must be >= 2"):
        anchor_cells(config("grid.anchor.runs=1"))

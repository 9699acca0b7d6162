import pytest

from grid.anchor import anchor_cells
from grid.compose import compose_config
from grid.expand import expand, to_config
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

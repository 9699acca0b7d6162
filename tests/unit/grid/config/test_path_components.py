"""Issue 45 item 1: `name`, `session_id` and the model, lever and corpus names that become paths are
checked before anything is written or launched: one line naming the key, the value and the fix, exit 2.

`grid report name=../../../x` wrote the page outside the store and `grid run session_id=../../../x`
the session file and engine logs."""

from __future__ import annotations

from pathlib import Path

import pytest

import grid.orchestrate.schedule
from grid.__main__ import main
from grid.config.compose import compose_config
from vocab.errors import ConfigError

BAD = ["../../../x", "/tmp/abs", "a\x00b", "a\\..\\b", "..", ""]


@pytest.fixture(autouse=True)
def no_launch(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a launch was reached")

    monkeypatch.setattr(grid.orchestrate.schedule, "init_ray", refuse)
    monkeypatch.setattr(grid.orchestrate.schedule, "run_phases", refuse)


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("value", BAD)
def test_grid_report_with_a_path_name_writes_nothing_and_says_so(tmp_path, capsys, value):
    store = tmp_path / "a" / "b" / "store"
    store.mkdir(parents=True)
    assert main(["report", f"paths.store={store}", "experiment=smoke", f"name='{value}'"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: name {value!r} "), line
    assert files_under(tmp_path) == set()


@pytest.mark.parametrize("value", ["../../../x", "/tmp/abs"])
def test_grid_run_with_a_path_session_id_writes_nothing_and_says_so(tmp_path, capsys, value):
    store = tmp_path / "a" / "b" / "store"
    argv = ["run", f"paths.store={store}", "experiment=smoke", f"session_id='{value}'"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: session_id {value!r} "), line
    assert files_under(tmp_path) == set()


@pytest.mark.parametrize(
    ("override", "key"),
    [
        # Each names a file that exists (conf/model/../model/tiny.yaml): today it is loaded.
        ("grid.models=['../model/tiny']", "grid.models"),
        ("grid.corpora=['../corpus/chat']", "grid.corpora"),
        ("grid.levers=[van,'../lever/suffix']", "grid.levers"),
        ("grid.anchor.corpus='../corpus/chat'", "grid.anchor.corpus"),
    ],
)
def test_model_lever_and_corpus_names_are_single_components(override, key):
    with pytest.raises(ConfigError) as info:
        compose_config(["experiment=smoke", override])
    assert str(info.value).startswith(key), str(info.value)
    assert "letters, digits" in str(info.value)


@pytest.mark.parametrize(
    ("group", "name", "spec"),
    [("corpus", "../x", "path: /data/x"), ("model", "a/b", "path: /m/x"), ("lever", "..", "description: x")],
)
def test_a_spec_given_in_an_experiment_file_needs_a_plain_name(tmp_path, group, name, spec):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        f"# @package _global_\nname: mine\n{group}:\n  {name!r}: {{{spec}}}\n"
    )
    with pytest.raises(ConfigError, match=f"^{group} {name!r} is a path"):
        compose_config([f"hydra.searchpath=[file://{tmp_path}]", "experiment=mine"])


@pytest.mark.parametrize("key", ["name", "session_id"])
def test_odd_bytes_are_refused_in_compose(key):
    with pytest.raises(ConfigError, match=f"^{key} 'a\\\\x01b' "):
        compose_config(["experiment=smoke", f"{key}='a\x01b'"])


def test_a_trace_given_as_a_path_on_purpose_stays_allowed():
    cfg = compose_config(["experiment=smoke", "+corpus.mytrace.path=/data/../data/trace.jsonl"])
    assert cfg.corpus.mytrace.path == "/data/../data/trace.jsonl"

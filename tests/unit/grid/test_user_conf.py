"""Models, corpora and experiments from the user's own folder, and specs given on the command line."""

import json

import pytest

from experiments.tune import Tune, compose_tune
from grid.cli.corpus_report import corpus
from grid.cli.plan_report import plan_summary
from grid.config import catalog
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.anchor import anchor_cells
from vocab.errors import ConfigError
from vocab.schema import ModelSpec


@pytest.fixture(autouse=True)
def no_leftover_catalog(monkeypatch):
    """Each test composes its own config; none leaves its folders to the next one's load_spec."""
    monkeypatch.delenv(catalog.CONF_ENV, raising=False)
    yield
    catalog.activate(None)


@pytest.fixture
def user_conf(tmp_path):
    """A folder outside the checkout with a corpus (and its trace), a model and an experiment."""
    conf = tmp_path / "conf"
    for group in ("corpus", "model", "experiment"):
        (conf / group).mkdir(parents=True)
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps({"prompt": f"question {i}?"}) + "\n" for i in range(40)))
    (conf / "corpus" / "mytrace.yaml").write_text(f"name: mytrace\npath: {trace}\nlicense: mine\n")
    (conf / "model" / "mymodel.yaml").write_text(
        "name: mymodel\npath: /models/mymodel\nparams_b: 1.0\nexpected_tok_per_s: 50\n"
    )
    (conf / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nname: mine\n"
        "grid:\n  models: [mymodel]\n  corpora: [mytrace]\n  levers: [van, suffix]\n"
    )
    return conf


def cells(*overrides):
    return expand(to_config(compose_config(list(overrides))))


def test_a_user_folder_on_hydra_searchpath_gives_experiment_model_and_corpus(user_conf):
    found = cells(f"hydra.searchpath=[file://{user_conf}]", "experiment=mine")
    assert {c.engine_spec.model.name for c in found} == {"mymodel"}
    assert {c.engine_spec.model.path for c in found} == {"/models/mymodel"}
    assert {(c.corpus.name, c.corpus.license) for c in found} == {("mytrace", "mine")}
    assert {c.engine_spec.lever.name for c in found} == {"van", "suffix"}


def test_lever_grid_conf_gives_the_same_to_plan_anchor_and_corpus(user_conf, monkeypatch, capsys):
    monkeypatch.setenv(catalog.CONF_ENV, str(user_conf))
    summary = plan_summary(["experiment=mine"])
    assert [b["model"] for b in summary["bundles"]] == ["mymodel"]
    assert [row["corpus"] for row in summary["corpora"]] == ["mytrace"]
    # The drift anchor (grid/plan/anchor.py names specs without a config) sees them too.
    start, _ = anchor_cells(to_config(compose_config(["experiment=mine"])))
    assert (start.engine_spec.model.name, start.corpus.name) == ("mymodel", "mytrace")
    assert corpus(["format=json"]) == 0
    rows = {row["corpus"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["mytrace"]["prompts"] == 40 and "code_complete" in rows


def test_a_user_file_with_a_shipped_name_replaces_the_shipped_one(user_conf):
    (user_conf / "corpus" / "code_complete.yaml").write_text("name: code_complete\npath: /data/mine.jsonl\n")
    found = cells(f"hydra.searchpath=[file://{user_conf}]", "experiment=smoke")
    by_name = {c.corpus.name: c.corpus for c in found}
    assert by_name["code_complete"].path == "/data/mine.jsonl"
    assert by_name["code_complete"].endpoint == "chat"  # the user's file, not merged with the shipped one
    assert by_name["chat_bench"].path == "corpora/chat_bench.jsonl"


def test_tune_reads_models_corpora_and_experiments_from_the_user_folder(user_conf):
    cfg = compose_tune(
        [f"hydra.searchpath=[file://{user_conf}]", "model=mymodel", "corpora=[mytrace]", "experiment=mine"]
    )
    assert cfg.grid_overrides[0] == f"hydra.searchpath=[file://{user_conf}]"
    probe = Tune(cfg, ModelSpec(name="mymodel", path="x"), "t", None, replay=True)
    model = probe.catalog.load(ModelSpec, "mymodel")
    assert model.path == "/models/mymodel"
    keys = Tune(cfg, model, "t", None, replay=True).stage("van", {"van": []})
    assert keys


def test_unknown_experiment_lists_the_user_folders_ones_too(user_conf, monkeypatch):
    monkeypatch.setenv(catalog.CONF_ENV, str(user_conf))
    with pytest.raises(ConfigError, match=r"unknown experiment 'nope': known experiments are .*\bmine\b"):
        compose_config(["experiment=nope"])
    with pytest.raises(ConfigError, match=r"unknown model 'nope': known models are .*\bmymodel\b.*\btiny\b"):
        compose_config(["grid.models=[nope]"])


def test_a_user_folder_that_is_not_there_fails(tmp_path, monkeypatch):
    monkeypatch.setenv(catalog.CONF_ENV, str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match=r"LEVER_GRID_CONF names .*nope, which is not a folder"):
        compose_config([])
    monkeypatch.delenv(catalog.CONF_ENV)
    with pytest.raises(ConfigError, match=r"hydra.searchpath names .*, which is not a folder"):
        compose_config([f"hydra.searchpath=[file://{tmp_path / 'nope'}]"])


def test_a_corpus_given_on_the_command_line_alone():
    found = cells("grid.corpora=[mytrace]", "+corpus.mytrace.path=/data/trace.jsonl", "grid.levers=[van]")
    assert {(c.corpus.name, c.corpus.path, c.corpus.format) for c in found} == {
        ("mytrace", "/data/trace.jsonl", "auto")
    }


def test_a_corpus_option_per_corpus_takes_effect():
    plain = {c.corpus.name: c for c in cells("experiment=smoke", "grid.levers=[van]")}
    given = {
        c.corpus.name: c
        for c in cells("experiment=smoke", "grid.levers=[van]", "+corpus.code_complete.skip_bad_rows=true")
    }
    assert given["code_complete"].corpus.skip_bad_rows is True
    # The rest of the shipped file is kept; the other corpus is untouched.
    assert given["code_complete"].corpus.endpoint == "completions"
    assert given["chat_bench"].corpus.skip_bad_rows is False
    # A different corpus setting is a different cell.
    assert given["code_complete"].key != plain["code_complete"].key
    assert given["chat_bench"].key == plain["chat_bench"].key


def test_a_model_field_from_the_command_line_takes_effect():
    with pytest.raises(ConfigError, match=r"model 'deepseek_r1' needs 16 GPUs on one node"):
        cells("experiment=final", "+model.deepseek_r1.tp=16")


def test_a_given_name_without_a_file_must_be_a_whole_spec():
    with pytest.raises(
        ConfigError, match=r"corpus 'code_complet' has no file \(known corpora: .*code_complete"
    ):
        compose_config(["+corpus.code_complet.skip_bad_rows=true"])


@pytest.mark.parametrize(
    ("group", "text", "overrides"),
    [
        ("corpus", "name: bad\npath: [unclosed\n", ["grid.corpora=[bad]"]),
        ("experiment", "# @package _global_\ngrid: {models: [tiny\n", ["experiment=bad"]),
    ],
)
def test_a_user_file_that_is_not_yaml_is_one_line_naming_file_and_line(
    tmp_path, monkeypatch, group, text, overrides
):
    # Issue 28: a YAML syntax error in a LEVER_GRID_CONF file the run used printed yaml's traceback.
    (tmp_path / group).mkdir()
    (tmp_path / group / "bad.yaml").write_text(text)
    monkeypatch.setenv(catalog.CONF_ENV, str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        plan_summary(overrides)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / group / 'bad.yaml'}, line 3, column 1: not valid YAML (")
    assert "\n" not in message and message.endswith("fix the file there")

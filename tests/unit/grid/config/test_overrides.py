"""Every override is checked: unknown keys fail with or without `+`, and unknown names list the known ones."""

from dataclasses import fields

import pytest

from experiments.tune import compose_tune
from grid.config import catalog
from grid.config.compose import CONF_DIR, compose_config
from vocab.errors import ConfigError
from vocab.schema import Config, CorpusSpec, LoadSpec, ModelSpec


@pytest.fixture(autouse=True)
def no_leftover_catalog(monkeypatch):
    monkeypatch.delenv(catalog.CONF_ENV, raising=False)
    yield
    catalog.activate(None)


def names(tp):
    return ", ".join(sorted(f.name for f in fields(tp)))


def shipped(group):
    return ", ".join(sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml")))


def message(*overrides):
    with pytest.raises(ConfigError) as info:
        compose_config(["experiment=smoke", *overrides])
    return str(info.value)


@pytest.mark.parametrize("form", ["", "+", "++"])
def test_an_unknown_key_fails_with_or_without_plus_and_lists_the_known_ones(form):
    text = message(f"{form}load.maxtokens=5")
    assert f"unknown key 'load.maxtokens': load has {names(LoadSpec)}" in text
    # Never the hint that `+load.maxtokens=5` would help.
    assert "+load.maxtokens" not in text


@pytest.mark.parametrize("form", ["", "+"])
def test_an_unknown_top_level_key_lists_the_configs_keys_and_groups(form):
    text = message(f"{form}sesion_id=x")
    assert f"unknown key 'sesion_id': the config's keys are {names(Config)}" in text
    assert "groups cluster, engine, experiment, load" in text


@pytest.mark.parametrize(
    ("override", "words"),
    [
        (
            "+grid.anchor.modl=tiny",
            "unknown key 'grid.anchor.modl': grid.anchor has corpus, enabled, lever, model",
        ),
        ("+model.deepseek_r1.tpp=16", f"unknown key 'model.deepseek_r1.tpp': a model has {names(ModelSpec)}"),
        (
            "+corpus.code_complete.skip_bad_row=true",
            f"unknown key 'corpus.code_complete.skip_bad_row': a corpus has {names(CorpusSpec)}",
        ),
        (
            "cluster.nodes=[{count:1,gpus:8,cpu:3}]",
            "unknown key 'cluster.nodes.cpu': cluster.nodes has count, cpus",
        ),
    ],
)
def test_unknown_keys_at_any_depth_are_named(override, words):
    assert words in message(override)


@pytest.mark.parametrize("override", ["corpus.skip_bad_rows=true", "+corpus.skip_bad_rows=true"])
def test_a_corpus_field_without_a_corpus_name_says_the_form_that_works(override):
    text = message(override)
    assert "+corpus.<name>.<field>=value" in text
    assert f"known corpora: {shipped('corpus')}" in text


@pytest.mark.parametrize(
    ("override", "group", "where"),
    [
        ("+grid.ks.suffx=[4]", "lever", "grid.ks"),
        ("+grid.num_prompts.chat_bnch=4", "corpus", "grid.num_prompts"),
        ("+plan.rates.tinny=30", "model", "plan.rates"),
        ("grid.anchor.corpus=nope", "corpus", "grid.anchor.corpus"),
        ("grid.own_engine_corpora=[mixx]", "corpus", "grid.own_engine_corpora"),
    ],
)
def test_names_inside_dict_fields_must_exist(override, group, where):
    name = override.split("=")[0].rsplit(".", 1)[-1] if override.startswith("+") else override.split("=")[1]
    name = name.strip("[]")
    plural = catalog.PLURAL[group]
    text = message(override)
    assert (
        f"{where} names {group} '{name}', which does not exist: known {plural} are {shipped(group)}" in text
    )


@pytest.mark.parametrize(("group", "plural"), [("experiment", "experiments"), ("cluster", "clusters")])
def test_an_unknown_config_group_option_lists_every_known_one(group, plural):
    with pytest.raises(ConfigError) as info:
        compose_config([f"{group}=nope"])
    assert f"unknown {group} 'nope': known {plural} are {shipped(group)}" in str(info.value)


@pytest.mark.parametrize(
    ("group", "field"), [("models", "model"), ("levers", "lever"), ("corpora", "corpus")]
)
def test_an_unknown_grid_name_lists_every_known_one(group, field):
    text = message(f"grid.{group}=[nope]")
    assert f"unknown {field} 'nope': known {group} are {shipped(field)}" in text


@pytest.mark.parametrize("override", ["model=tiny", "+model=tiny", "+corpus=code_complete"])
def test_a_spec_named_like_a_config_group_points_to_the_grid(override):
    text = message(override)
    assert (
        "are named in grid." in text and "+" + override.lstrip("+").split("=")[0] + ".<name>.<field>" in text
    )


def test_the_run_config_cannot_set_the_user_folders_itself():
    assert "LEVER_GRID_CONF" in message("paths.user_conf=[/x]")


@pytest.mark.parametrize("form", ["", "+"])
def test_tune_rejects_unknown_keys_with_or_without_plus(form):
    with pytest.raises(ConfigError) as info:
        compose_tune(["model=tiny", f"{form}sufix_k=4"])
    text = str(info.value)
    assert "unknown key 'sufix_k': the config's keys are confirm_repeats, confirm_seed, corpora, " in text
    assert "(experiments/tune_procedure.py:TuneConfig)" in text and "+sufix_k" not in text

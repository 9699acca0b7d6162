"""Issue 28, item 3: every knob is checked against its schema range before anything launches.

Each bad value is one `error:` line from `plan` and `run` naming the key, the value, the allowed
range and the fix, exit code 2, before an engine could start.
"""

import pytest

import grid.orchestrate.run
from grid.__main__ import main
from grid.config import catalog
from grid.config.compose import CONF_DIR, compose_config
from vocab.errors import ConfigError


@pytest.fixture(autouse=True)
def no_leftover_catalog(monkeypatch):
    monkeypatch.delenv(catalog.CONF_ENV, raising=False)
    yield
    catalog.activate(None)


@pytest.fixture
def no_launch(monkeypatch):
    """Anything that gets as far as a launch fails the test."""

    def launch(*args, **kwargs):
        raise AssertionError("launched")

    monkeypatch.setattr(grid.orchestrate.run, "launch", launch)


def message(*overrides):
    with pytest.raises(ConfigError) as info:
        compose_config(["experiment=smoke", *overrides])
    return str(info.value)


# (override, the line's words: key, bad value, range, fix). Each was accepted, and an engine launched.
BAD_VALUES = [
    ("load.temperature=-1", "load.temperature must be >= 0, got -1.0 (vLLM answers a negative temperature"),
    ("ray.max_in_flight=-5", "ray.max_in_flight must be >= 0, got -5"),
    ("load.warmup_requests=-3", "load.warmup_requests must be >= 0, got -3"),
    ("run.lease_s=0", "run.lease_s must be > 0, got 0.0"),
    ("run.min_store_free_mb=-1", "run.min_store_free_mb must be >= 0, got -1"),
    (
        "load.concurrency=99999999999999999999",
        "load.concurrency must be >= 1 and <= 4,096, got 99999999999999999999",
    ),
    ("load.temperature=nan", "load.temperature must be >= 0, got nan"),
    ("load.request_timeout_s=inf", "load.request_timeout_s must be > 0, got inf"),
    ("engine.gpu_memory_utilization=1.5", "engine.gpu_memory_utilization must be > 0 and <= 1, got 1.5"),
    ("plan.output_fill=0", "plan.output_fill must be > 0 and <= 1, got 0.0"),
    ("run.invalid_reruns=-1", "run.invalid_reruns must be >= 0, got -1"),
    ("gates.min_concurrency_held=2", "gates.min_concurrency_held must be >= 0 and <= 1, got 2.0"),
    ("cluster.nodes=[{count:-1,gpus:8,cpus:4}]", "cluster.nodes.0.count must be >= 0, got -1"),
    ("grid.num_prompts.chat_bench=-2", "grid.num_prompts.chat_bench must be >= 1, got -2"),
    ("+plan.rates.tiny=0", "plan.rates.tiny must be > 0, got 0.0 (plan divides by it)"),
    (
        "grid.engine_reuse=sometimes",
        "grid.engine_reuse must be one of auto, per_spec, per_corpus, shared, got 'sometimes'",
    ),
    (
        "engine.dtype=fp7",
        "engine.dtype must be one of auto, half, float16, bfloat16, float, float32, got 'fp7'",
    ),
]


@pytest.mark.parametrize(("override", "words"), BAD_VALUES, ids=[o for o, _ in BAD_VALUES])
def test_a_value_outside_its_range_is_one_line_naming_key_value_range_and_fix(override, words):
    text = message(override)
    assert words in text
    key = override.lstrip("+").split("=", 1)[0]
    assert "\n" not in text
    if "." in key and not key.startswith(("cluster.", "grid.num_prompts", "plan.rates")):
        assert f"set {key}=<value>" in text  # the fix


def test_the_fix_quotes_the_default():
    assert "set run.lease_s=<value> (default 120.0)" in message("run.lease_s=0")


@pytest.mark.parametrize("key", ["paths.store", "paths.data_dir", "paths.cache_dir", "paths.models_dir"])
def test_an_empty_path_is_an_error(key):
    """`paths.store=` wrote cells/ sessions/ logs/ leases/ engines/ into the checkout."""
    text = message(f"{key}=")
    assert text.startswith(f"{key} is empty ('')") and f"set {key}=<value>" in text


def test_every_bad_value_at_once_one_line_each():
    text = message("load.temperature=-1", "run.lease_s=0")
    lines = text.splitlines()
    assert lines[0] == "2 problems in the config:"
    assert lines[1].strip().startswith("load.temperature must be >= 0")
    assert lines[2].strip().startswith("run.lease_s must be > 0")


def test_a_spec_field_is_checked_where_it_is_set():
    text = message("+model.tiny.tp=0")
    assert "model.tiny.tp must be >= 1, got 0 (tp is the GPUs one engine spans)" in text
    assert f"set it in {CONF_DIR / 'model' / 'tiny.yaml'} or give +model.tiny.tp=<value>" in text
    text = message("+lever.suffix.ks=[8,-1]", "grid.levers=[suffix]")
    assert "lever.suffix.ks must be >= 1, got -1 (K is the number of draft tokens per step" in text
    assert "corpus.code_complete.format must be one of auto, jsonl" in message(
        "+corpus.code_complete.format=csv"
    )


def test_a_spec_file_out_of_range_is_named(tmp_path, monkeypatch):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "tiny.yaml").write_text("name: tiny\npath: /w\ntp: 0\n")
    monkeypatch.setenv(catalog.CONF_ENV, str(tmp_path))
    text = message()
    assert (
        f"model.tiny.tp must be >= 1, got 0 (tp is the GPUs one engine spans); set it in {tmp_path}" in text
    )


def test_force_that_matches_no_cell_lists_near_matches():
    text = message("grid.levers=[van]", "run.force=[tiny/vna]")
    assert text.startswith("run.force entry 'tiny/vna' starts no cell's key or label")
    assert "near matches: " in text and "tiny/van" in text.split("near matches: ")[1]
    # An entry that starts a label or a key forces those cells, as before.
    cfg = compose_config(["experiment=smoke", "grid.levers=[van]", "run.force=[tiny/van/code]"])
    assert list(cfg.run.force) == ["tiny/van/code"]


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize(
    "override",
    [
        "load.temperature=-1",
        "ray.max_in_flight=-5",
        "load.warmup_requests=-3",
        "run.lease_s=0",
        "run.min_store_free_mb=-1",
        "load.concurrency=99999999999999999999",
        "paths.store=",
        "run.force=[a-key-that-matches-nothing]",
    ],
)
def test_plan_and_run_stop_with_exit_2_and_one_error_line(command, override, capsys, no_launch, tmp_path):
    store = [] if override.startswith("paths.store") else [f"paths.store={tmp_path / 'store'}"]
    assert main([command, "experiment=smoke", *store, override]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    key = override.split("=", 1)[0]
    assert line.startswith("error: ") and key in line, line
    assert "session " not in captured.out  # nothing got as far as a session, let alone an engine
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")))
def test_every_shipped_experiment_passes_the_checks(experiment):
    compose_config([f"experiment={experiment}"])

from pathlib import Path

import pytest

from grid.config.compose import compose_config
from grid.config.expand import expand, expand_all, to_config
from grid.plan.groups import group_by_engine
from vocab.cells import load_identity
from vocab.errors import ConfigError

CONF = Path(__file__).resolve().parents[4] / "conf"
# Launch-grouping tests pin engine reuse; `auto` (the default) has its own test below.
PER_SPEC = "grid.engine_reuse=per_spec"


def cells_for(*overrides):
    return expand(to_config(compose_config(list(overrides))))


def test_smoke_expands_to_models_x_corpora_x_lever_configs():
    cells = cells_for("experiment=smoke")
    labels = sorted(c.label for c in cells)
    assert labels == [
        "tiny/suffix-k8/chat_bench/r0",
        "tiny/suffix-k8/code_complete/r0",
        "tiny/van/chat_bench/r0",
        "tiny/van/code_complete/r0",
    ]


def test_repeats_on_one_engine_stop_unless_repeats_are_allowed():
    with pytest.raises(
        ConfigError, match=r"same_engine sends every repeat's prompts.*load.allow_repeats=true"
    ):
        cells_for("experiment=smoke", "grid.repeats=2", "grid.repeat_order=same_engine", PER_SPEC)


def test_repeats_on_one_engine_share_one_launch():
    overrides = ("grid.repeats=2", "grid.repeat_order=same_engine", "load.allow_repeats=true", PER_SPEC)
    cells = cells_for("experiment=smoke", *overrides)
    groups = group_by_engine(cells)
    assert len(cells) == 8
    assert len(groups) == 2
    assert all(len(g.cells) == 4 for g in groups)
    assert {g.spec.lever.name for g in groups} == {"van", "suffix"}


def test_interleaved_repeats_relaunch_and_reverse_the_lever_order():
    cells = cells_for("experiment=smoke", "grid.repeats=3", PER_SPEC)
    groups = group_by_engine(cells)
    assert [(g.cells[0].repeat, g.spec.lever.name) for g in groups] == [
        (0, "van"),
        (0, "suffix"),
        (1, "suffix"),
        (1, "van"),
        (2, "van"),
        (2, "suffix"),
    ]
    assert all(len(g.cells) == 2 for g in groups)
    assert len({c.key for c in cells}) == 12


def test_k_sweep_gives_one_engine_per_k():
    cells = cells_for("experiment=smoke", "grid.levers=[suffix]", "+grid.ks.suffix=[4,8]", PER_SPEC)
    assert sorted({c.engine_spec.k for c in cells}) == [4, 8]
    assert len(group_by_engine(cells)) == 2


def test_lever_without_drafts_runs_at_k0():
    cells = cells_for("experiment=smoke", "grid.levers=[van]")
    assert {c.engine_spec.k for c in cells} == {0}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("grid.models=[nosuchmodel]", "unknown model 'nosuchmodel'"),
        ("grid.levers=[van,warp]", "unknown lever 'warp'"),
        ("grid.corpora=[poems]", "unknown corpus 'poems'"),
        ("+grid.ks.suffix=[0]", "K must be positive"),
        ("+grid.ks.suffix=[4,4]", "K values repeat"),
        ("+grid.ks.bestkpad=[4]", "not in grid.levers"),
        ("+grid.ks.van=[4]", "has no drafts"),
        ("load.max_tokens=0", "load.max_tokens must be >= 1"),
        ("grid.repeat_order=shuffled", "grid.repeat_order must be"),
        ("load.concurrency=0", "load.concurrency must be >= 1"),
        ("grid.repeats=0", "grid.repeats must be >= 1"),
        ("grid.levers=[van,van]", "lists a name twice"),
    ],
)
def test_bad_grids_fail_before_launch_with_the_name(override, message):
    with pytest.raises(ConfigError, match=message):
        cells_for("experiment=smoke", override)


def test_unknown_name_error_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"known models are .*tiny"):
        cells_for("grid.models=[tinyy]")


@pytest.mark.parametrize(
    "override",
    ["load.concurrancy=3", "experiment=nosuch", "load.concurrency=abc", "grid.models=[tiny", "=="],
)
def test_malformed_overrides_are_one_config_error(override):
    with pytest.raises(ConfigError, match="bad config or override"):
        compose_config([override])


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_shipped_experiment_composes_and_expands(experiment):
    assert cells_for(f"experiment={experiment}")


def test_tp_larger_than_any_node_is_rejected():
    with pytest.raises(ConfigError, match=r"needs 8 GPUs on one node .* has 4"):
        cells_for("experiment=final", "cluster.nodes=[{count:2,gpus:4}]")


def test_w4a4_without_variant_is_skipped_with_reason():
    expansion = expand_all(to_config(compose_config(["experiment=smoke", "grid.levers=[van,w4a4]"])))
    assert {c.engine_spec.lever.name for c in expansion.cells} == {"van"}
    assert len(expansion.skipped) == 1
    assert "no quantized_variant" in expansion.skipped[0].reason


def test_final_grid_shape():
    overrides = ["experiment=final", PER_SPEC, "grid.own_engine_corpora=[]", "grid.repeats=1"]
    expansion = expand_all(to_config(compose_config(overrides)))
    groups = group_by_engine(expansion.cells)
    models = {g.spec.model.name for g in groups}
    assert len(models) == 11
    assert {c.corpus.name for c in expansion.cells} == {
        "chat",
        "chat_bench",
        "code_complete",
        "code_edit",
        "summarize",
        "rag_qa",
        "agentic",
        "mix",
    }
    with_variant = {g.spec.model.name for g in groups if g.spec.lever.name == "w4a4"}
    replicates = [c for c in expansion.cells if c.replicate]
    # A van replicate per model x corpus, each on its own launch.
    assert len(replicates) == 11 * 8
    shared = [g for g in groups if not g.cells[0].replicate]
    # van + suffix + bestkpad x 4 K + dynk, plus w4a4 where a variant exists.
    assert len(shared) == 7 * 11 + len(with_variant)
    assert len(expansion.cells) == 8 * len(shared) + len(replicates)
    assert len(expansion.skipped) == 11 - len(with_variant)
    big = {g.spec.model.name for g in groups if g.gpus == 8}
    assert {"llama31_405b_fp8", "deepseek_r1"} <= big


def test_engine_reuse_per_corpus_gives_each_corpus_a_fresh_engine_with_the_same_cells():
    shared = cells_for("experiment=smoke", "grid.repeats=2", "grid.engine_reuse=per_spec")
    fresh = cells_for("experiment=smoke", "grid.repeats=2", "grid.engine_reuse=per_corpus")
    assert [c.key for c in fresh] == [c.key for c in shared]
    assert len(group_by_engine(shared)) == 4
    groups = group_by_engine(fresh)
    assert len(groups) == 8 and all(len(g.cells) == 1 for g in groups)


def test_unknown_engine_reuse_is_refused():
    with pytest.raises(ConfigError, match="engine_reuse"):
        cells_for("experiment=smoke", "grid.engine_reuse=sometimes")


def test_auto_engine_reuse_gives_suffix_levers_a_fresh_engine_per_corpus_only():
    groups = group_by_engine(cells_for("experiment=smoke"))
    by_lever = {}
    for g in groups:
        by_lever.setdefault(g.spec.lever.name, []).append(len(g.cells))
    assert by_lever == {"van": [2], "suffix": [1, 1]}


def test_grid_num_prompts_sizes_one_corpus_and_changes_only_its_keys():
    plain = {c.label: c for c in cells_for("experiment=smoke")}
    sized = {c.label: c for c in cells_for("experiment=smoke", "grid.num_prompts.chat_bench=7")}
    for label, cell in sized.items():
        if "/chat_bench/" in label:
            assert cell.load.num_prompts == 7 and cell.key != plain[label].key
        else:
            assert cell.load == plain[label].load and cell.key == plain[label].key


def test_an_experiments_sizing_of_a_corpus_left_out_of_the_grid_is_ignored():
    # smoke sizes chat_bench (40 prompts, for the demo's windows); a grid of code_complete alone
    # stopped with "grid.num_prompts names corpus 'chat_bench', which is not in grid.corpora".
    chat = [c for c in cells_for("experiment=smoke") if c.corpus.name == "chat_bench"]
    assert {c.load.num_prompts for c in chat} == {40}
    cells = cells_for("experiment=smoke", "grid.corpora=[code_complete]", "load.num_prompts=9")
    assert {c.corpus.name for c in cells} == {"code_complete"}
    assert {c.load.num_prompts for c in cells} == {9}


@pytest.mark.parametrize(
    ("override", "words"),
    [("+grid.num_prompts.nope=7", "names corpus 'nope'"), ("grid.num_prompts.chat_bench=0", "must be >= 1")],
)
def test_grid_num_prompts_rejects_unknown_corpora_and_zero(override, words):
    with pytest.raises(ConfigError, match=words):
        cells_for("experiment=smoke", override)


def test_allow_repeats_is_not_in_the_key_but_later_repeats_have_their_own_seed():
    base = {c.label: c.key for c in cells_for("experiment=smoke", "grid.repeats=2")}
    allowed = {
        c.label: c.key for c in cells_for("experiment=smoke", "grid.repeats=2", "load.allow_repeats=true")
    }
    assert base == allowed
    cell = cells_for("experiment=smoke")[0]
    assert "prompt_seed" not in load_identity(cell.load, 0)
    assert load_identity(cell.load, 2)["prompt_seed"] == cell.load.seed + 2


def test_mix_gets_an_engine_of_its_own_even_where_engines_are_shared():
    cells = cells_for(
        "experiment=smoke",
        "grid.levers=[van]",
        "grid.corpora=[mix,code_complete,chat_bench]",
        "grid.repeats=2",
        PER_SPEC,
    )
    groups = group_by_engine(cells)
    corpora_per_launch = sorted(tuple(c.corpus.name for c in g.cells) for g in groups)
    assert corpora_per_launch == [
        ("code_complete", "chat_bench"),
        ("code_complete", "chat_bench"),
        ("mix",),
        ("mix",),
    ]


def test_van_replicates_are_added_per_model_and_corpus_on_fresh_engines_where_levers_are_judged():
    config = to_config(compose_config(["experiment=smoke", "gates.equivalence.van_replicate=true"]))
    cells = expand(config)
    replicates = [c for c in cells if c.replicate]
    assert sorted(c.label for c in replicates) == [
        "tiny/van/chat_bench/r0/replicate",
        "tiny/van/code_complete/r0/replicate",
    ]
    van = {c.corpus.name: c for c in cells if c.engine_spec.lever.name == "van" and not c.replicate}
    for rep in replicates:
        twin = van[rep.corpus.name]
        assert (
            rep.load == twin.load and rep.engine_spec == twin.engine_spec
        )  # the same prompts, the same launch args
        assert rep.key != twin.key
    groups = group_by_engine(cells)
    # Each replicate alone on its launch: its prompts are new to its engine.
    assert all(len(g.cells) == 1 for g in groups if any(c.replicate for c in g.cells))


@pytest.mark.parametrize(
    "override",
    [
        "grid.levers=[van]",
        "grid.levers=[van,w4a4]",
        "load.temperature=1.0",
        "gates.equivalence.van_replicate=false",
    ],
)
def test_no_replicate_where_nothing_is_judged_by_exact_match(override):
    overrides = ["experiment=smoke", "gates.equivalence.van_replicate=true", override]
    if "w4a4" in override:
        overrides.append("+grid.ks={}")
    assert not any(c.replicate for c in cells_for(*overrides))


def test_van_replicate_always_adds_the_replicate_to_a_van_only_grid():
    # experiments/tune.py's van stage: its levers come in later stages, judged against this van run.
    base = ["experiment=smoke", "gates.equivalence.van_replicate=true", "grid.levers=[van]"]
    assert not any(c.replicate for c in cells_for(*base))
    replicates = [c for c in cells_for(*base, "gates.equivalence.van_replicate_always=true") if c.replicate]
    assert sorted(c.label for c in replicates) == [
        "tiny/van/chat_bench/r0/replicate",
        "tiny/van/code_complete/r0/replicate",
    ]

"""grid.engine_reuse=shared (issue 29 items 2 and 4): one launch per (model, argv), cells in ABBA blocks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from vocab.cells import draft_hook
from vocab.errors import ConfigError
from workers.engine.args import (
    DEV_MODE_ENV,
    RESET_EXTENSION,
    SWITCH_ENV,
    Endpoint,
    launch_argv,
    launch_env,
    serve_argv,
)

ENDPOINT = Endpoint("127.0.0.1", 8123, "secret")
SUFFIX_FAMILY_K12 = [
    "experiment=smoke",
    "engine=gpu",
    "grid.levers=[van,suffix,bestkpad,dynk]",
    "+grid.ks.suffix=[12]",
    "+grid.ks.bestkpad=[8,12]",
    "grid.repeats=4",
    "grid.engine_reuse=shared",
]


def groups(*overrides: str):
    return group_by_engine(expand(to_config(compose_config(list(overrides)))))


def test_levers_of_one_argv_share_a_launch_and_every_argv_gets_one_launch_per_repeat():
    launches = groups(*SUFFIX_FAMILY_K12)
    by_levers = Counter((g.levers, g.spec.k) for g in launches)
    k12 = [key for key in by_levers if key[1] == 12]
    assert len(k12) == 2 and all(set(levers) == {"suffix", "bestkpad", "dynk"} for levers, _ in k12)
    # 4 repeats: each argv (van, bestkpad K=8, the K=12 family) on 4 launches.
    per_argv = Counter((g.spec.lever.name if g.spec.k != 12 else "k12-family", g.spec.k) for g in launches)
    assert set(per_argv.values()) == {4}, per_argv
    assert len(launches) == 12


def test_a_shared_launch_runs_one_argv_for_every_lever_it_holds():
    """The only variable between the levers of a shared launch is the draft hook, chosen at run time."""
    launch = next(g for g in groups(*SUFFIX_FAMILY_K12) if g.spec.k == 12)
    argv = launch_argv(launch, ENDPOINT, Path("/m"))
    for cell in launch.cells:
        assert serve_argv(cell.engine_spec, ENDPOINT, Path("/m"), shared=True) == argv, cell.label
    assert RESET_EXTENSION in argv
    env = launch_env(launch, {}, Path("/c"))
    assert env[SWITCH_ENV] == "1" and env[DEV_MODE_ENV] == "1"
    # The levers' own switches would install a fixed hook; dynk's K set reaches the switch.
    assert "LEVER_KPAD" not in env and "LEVER_DYNK" not in env
    assert env["LEVER_DYNK_KS"] == "4,6,12"
    assert launch.switches_hook and launch.resets


def test_van_alone_on_its_launch_is_reset_between_cells_without_a_switch():
    van = next(g for g in groups(*SUFFIX_FAMILY_K12) if g.spec.lever.name == "van")
    env = launch_env(van, {}, Path("/c"))
    assert van.resets and not van.switches_hook
    assert SWITCH_ENV not in env and env[DEV_MODE_ENV] == "1"


def test_blocks_hold_each_lever_once_on_one_prompt_draw_in_abba_order():
    launch = next(g for g in groups(*SUFFIX_FAMILY_K12) if g.spec.k == 12)
    blocks: dict[int, list] = {}
    for cell in launch.cells:
        blocks.setdefault(cell.block, []).append(cell)
    assert sorted(blocks) == list(range(len(blocks))) and len(blocks) == 2  # 2 corpora x 1 repeat
    orders = []
    for block in blocks.values():
        assert len({c.corpus.name for c in block}) == 1 and len({c.repeat for c in block}) == 1
        assert sorted(c.engine_spec.lever.name for c in block) == ["bestkpad", "dynk", "suffix"]
        orders.append([c.engine_spec.lever.name for c in block])
    assert orders[1] == orders[0][::-1]
    # Cells of a block are adjacent: the launch runs block after block.
    assert [c.block for c in launch.cells] == sorted(c.block for c in launch.cells)


def test_launches_per_argv_spreads_repeats_and_one_launch_is_refused():
    launches = groups(*SUFFIX_FAMILY_K12, "grid.launches_per_argv=2")
    family = [g for g in launches if g.spec.k == 12]
    assert sorted(g.cells[0].launch for g in family) == [0, 1]
    assert {tuple(sorted({c.repeat for c in g.cells})) for g in family} == {(0, 2), (1, 3)}
    with pytest.raises(ConfigError, match="launches_per_argv=1 measures no launch-to-launch noise"):
        groups(*SUFFIX_FAMILY_K12, "grid.launches_per_argv=1")


def test_mix_shares_its_launch_and_replicates_share_one_of_their_own():
    """Every cell starts on a reset engine, so no corpus needs an engine of its own."""
    launches = groups(
        "experiment=smoke", "engine=gpu", "grid.corpora=[code_complete,mix]", "grid.levers=[van]",
        "grid.repeats=2", "grid.engine_reuse=shared", "gates.equivalence.van_replicate=true",
        "gates.equivalence.van_replicate_always=true",
    )  # fmt: skip
    measured = [g for g in launches if not any(c.replicate for c in g.cells)]
    assert len(measured) == 2 and all(
        {c.corpus.name for c in g.cells} == {"code_complete", "mix"} for g in measured
    )
    replicates = [g for g in launches if any(c.replicate for c in g.cells)]
    assert len(replicates) == 1 and replicates[0].cells[0].launch == -1 and len(replicates[0].cells) == 2


def test_shared_keeps_every_cell_key():
    """Scheduling only: the same cells (and keys) as per_spec, on fewer launches."""
    per_spec = expand(to_config(compose_config([*SUFFIX_FAMILY_K12[:-1], "grid.engine_reuse=per_spec"])))
    shared = expand(to_config(compose_config(SUFFIX_FAMILY_K12)))
    assert sorted(c.key for c in per_spec) == sorted(c.key for c in shared)


def test_the_studys_launches_fall_to_at_most_a_fifth_of_a_launch_per_drafting_corpus():
    """Issue 29's target: at most 572 launches (20 % of engine_reuse=auto's 2,860) for the same cells."""
    auto = groups("experiment=final", "grid.engine_reuse=auto")
    shared = groups("experiment=final")
    assert sorted(c.key for g in auto for c in g.cells) == sorted(c.key for g in shared for c in g.cells)
    assert len(shared) <= 0.2 * len(auto), (len(shared), len(auto))


def test_a_lever_that_sets_other_environment_keeps_its_own_launch():
    from vocab.schema import LeverSpec

    assert draft_hook(LeverSpec(name="a", spec_method="suffix")) == "suffix"
    assert (
        draft_hook(LeverSpec(name="b", spec_method="suffix", requires_plugin="kpad", env={"LEVER_KPAD": "1"}))
        == "kpad"
    )
    foreign = LeverSpec(
        name="c", spec_method="suffix", requires_plugin="kpad", env={"VLLM_X": "1", "LEVER_KPAD": "1"}
    )
    assert draft_hook(foreign) is None
    assert draft_hook(LeverSpec(name="d", spec_method="suffix", env={"VLLM_X": "1"})) is None
    assert draft_hook(LeverSpec(name="van")) is None

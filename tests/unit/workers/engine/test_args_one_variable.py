"""One variable per comparison: levers compared at one K launch with the same argv.

suffix vs bestkpad at K and suffix vs dynk at dynk's maximum K must differ only
in the plugin's switch (an environment variable), never in CUDA-graph settings.
"""

import json
from pathlib import Path

import pytest

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.engine.args import Endpoint, serve_argv, serve_env

ENDPOINT = Endpoint("127.0.0.1", 8123, "secret")


def launches(*overrides: str) -> dict[str, object]:
    config = to_config(compose_config(["experiment=smoke", "engine=gpu", *overrides]))
    return {g.spec.label.split("/", 1)[1]: g.spec for g in group_by_engine(expand(config))}


def argv_env(spec) -> tuple[list[str], dict[str, str]]:
    return serve_argv(spec, ENDPOINT, Path("/m")), serve_env(spec, {}, Path("/c"))


def env_difference(a: dict[str, str], b: dict[str, str]) -> set[str]:
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


@pytest.mark.parametrize("k", [4, 8, 12])
def test_suffix_and_bestkpad_at_one_k_differ_only_in_the_plugin_switch(k):
    specs = launches("grid.levers=[suffix,bestkpad]", f"+grid.ks.suffix=[{k}]", f"+grid.ks.bestkpad=[{k}]")
    suffix_argv, suffix_env = argv_env(specs[f"suffix-k{k}"])
    kpad_argv, kpad_env = argv_env(specs[f"bestkpad-k{k}"])
    assert suffix_argv == kpad_argv
    assert env_difference(suffix_env, kpad_env) == {"LEVER_KPAD"}


def test_suffix_and_dynk_at_the_same_maximum_k_differ_only_in_the_plugin_switch():
    specs = launches("grid.levers=[suffix,dynk]", "+grid.ks.suffix=[12]")
    suffix_argv, suffix_env = argv_env(specs["suffix-k12"])
    dynk_argv, dynk_env = argv_env(specs["dynk-k12"])
    assert suffix_argv == dynk_argv
    assert env_difference(suffix_env, dynk_env) == {"LEVER_DYNK", "LEVER_DYNK_KS"}


@pytest.mark.parametrize("k", [4, 6, 8, 12])
def test_every_drafting_ceiling_is_at_least_vllms_default(k):
    specs = launches("grid.levers=[suffix,bestkpad]", f"+grid.ks.suffix=[{k}]", f"+grid.ks.bestkpad=[{k}]")
    for label in (f"suffix-k{k}", f"bestkpad-k{k}"):
        argv, _ = argv_env(specs[label])
        compilation = json.loads(argv[argv.index("--compilation-config") + 1])
        # (1+K) x 32 alone gives 160-416, below vLLM's 512 on Hopper: steps between ran without graphs.
        assert compilation["max_cudagraph_capture_size"] == max((1 + k) * 32, 512)
        assert compilation["cudagraph_mode"] == "FULL_AND_PIECEWISE"


def test_a_blackwell_floor_raises_every_drafting_ceiling():
    specs = launches("grid.levers=[suffix]", "engine.cudagraph_capture_floor=1024")
    argv, _ = argv_env(specs["suffix-k8"])
    assert json.loads(argv[argv.index("--compilation-config") + 1])["max_cudagraph_capture_size"] == 1024

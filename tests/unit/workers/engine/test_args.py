import json
import sys
from pathlib import Path

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.engine.args import Endpoint, serve_argv, serve_env

ENDPOINT = Endpoint("127.0.0.1", 8123, "secret")


def specs(*overrides):
    groups = group_by_engine(expand(to_config(compose_config(["experiment=smoke", *overrides]))))
    return {g.spec.lever.name: g.spec for g in groups}


def flag_value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_van_pins_async_scheduling_and_has_no_drafts():
    argv = serve_argv(specs()["van"], ENDPOINT, Path("/m"))
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert "--async-scheduling" in argv
    assert "--speculative-config" not in argv
    assert flag_value(argv, "--model") == "/m/SmolLM2-135M-Instruct"
    assert flag_value(argv, "--host") == "127.0.0.1"
    assert flag_value(argv, "--api-key") == "secret"


def test_suffix_passes_method_and_k():
    argv = serve_argv(specs()["suffix"], ENDPOINT, Path("/m"))
    assert json.loads(flag_value(argv, "--speculative-config")) == {
        "method": "suffix",
        "num_speculative_tokens": 8,
    }
    assert "--async-scheduling" not in argv and "--no-async-scheduling" not in argv


def test_gpu_engine_uses_vllm_serve_and_memory_fraction():
    argv = serve_argv(specs("engine=gpu")["van"], ENDPOINT, Path("/m"))
    assert argv[:2] == ["vllm", "serve"]
    assert flag_value(argv, "--gpu-memory-utilization") == "0.85"
    assert "--enforce-eager" not in argv


def test_env_is_offline_with_caches_under_cache_dir():
    env = serve_env(specs()["van"], {"PATH": "/bin"}, Path("/c"))
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_CACHE_ROOT"] == "/c/vllm"
    assert env["PATH"] == "/bin"
    assert "VLLM_CPU_KVCACHE_SPACE" in env


def test_engine_compilation_merges_under_the_levers():
    site = "+engine.compilation={pass_config:{fuse_allreduce_rms:false},cudagraph_mode:PIECEWISE}"
    by_lever = specs("engine=gpu", "grid.levers=[van,bestkpad]", site)
    van = json.loads(flag_value(serve_argv(by_lever["van"], ENDPOINT, Path("/m")), "--compilation-config"))
    assert van == {"pass_config": {"fuse_allreduce_rms": False}, "cudagraph_mode": "PIECEWISE"}
    kpad_argv = serve_argv(by_lever["bestkpad"], ENDPOINT, Path("/m"))
    kpad = json.loads(flag_value(kpad_argv, "--compilation-config"))
    # The lever's FULL graphs win; the site's pass setting stays; capture covers (1+K) x concurrency.
    spec = by_lever["bestkpad"]
    assert kpad["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert kpad["pass_config"] == {"fuse_allreduce_rms": False}
    assert kpad["max_cudagraph_capture_size"] == max((1 + spec.k) * spec.engine.cudagraph_concurrency, 512)


def test_site_compilation_changes_the_engine_key_and_empty_keeps_it():
    plain = specs("engine=gpu")["van"]
    assert specs("engine=gpu", "+engine.compilation={}")["van"].key == plain.key
    assert specs("engine=gpu", "+engine.compilation={pass_config:{x:1}}")["van"].key != plain.key

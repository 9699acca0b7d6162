"""Issue 48 item 4: the lent multi-GPU hosts' cluster files, read by `grid plan` and `grid run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.cli.plan_report import simulate_plan
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.engine.args import Endpoint, launch_argv, launch_env

# The lent hosts keep NVLink multicast off: scripts/gpu/install.sh exports these.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
GPU_SMOKE = ["experiment=smoke", "engine=gpu"]
HOSTS = [(f"device_{gpu}x{n}", n) for gpu in ("h100", "h200") for n in (2, 4, 8)]


@pytest.mark.parametrize(("cluster", "gpus"), HOSTS)
def test_a_lent_host_describes_its_gpus_and_carries_the_no_multicast_settings(cluster, gpus):
    config = to_config(compose_config([f"cluster={cluster}", "experiment=smoke"]))
    assert config.cluster.name == cluster and [(n.count, n.gpus) for n in config.cluster.nodes] == [(1, gpus)]
    assert config.ray.use_gpus  # the scheduler reserves tp GPUs per bundle
    assert NO_MULTICAST.items() <= config.engine.env.items()
    assert config.engine.compilation["pass_config"]["fuse_allreduce_rms"] is False
    assert sorted(config.plan.engine_start_s_by_tp) == [1, 2, 4, 8]


def test_a_tp2_engine_on_the_8_gpu_host_is_launched_without_multicast():
    # smoke on the GPU engine: its env and compilation settings come from the cluster file alone.
    overrides = [
        "experiment=smoke",
        "engine=gpu",
        "cluster=device_h100x8",
        "grid.models=[llama31_8b_shaped_tp2]",
    ]
    (group, *_) = group_by_engine(expand(to_config(compose_config(overrides))))
    assert group.gpus == 2
    assert NO_MULTICAST.items() <= launch_env(group, {}, Path("/c")).items()
    argv = launch_argv(group, Endpoint("127.0.0.1", 8123, "k"), Path("/m"))
    compilation = json.loads(argv[argv.index("--compilation-config") + 1])
    assert compilation["pass_config"]["fuse_allreduce_rms"] is False
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"


def test_the_command_line_cluster_wins_over_the_experiments_own():
    config = to_config(compose_config(["experiment=gpu_validate", "cluster=device_h100x8"]))
    assert config.cluster.name == "device_h100x8" and config.ray.cpus_per_engine == 4  # the experiment's


def test_plan_simulates_on_the_hosts_nodes():
    summary = simulate_plan(
        ["experiment=smoke", "engine=gpu", "cluster=device_h200x4", "grid.models=[llama31_8b_shaped]"]
    )
    assert summary["cluster"] == "device_h200x4" and summary["nodes_gpus"] == [4]

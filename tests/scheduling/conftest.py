"""Scheduling and fault tests: a fake multi-node GPU cluster and a stand-in engine.

These test the driver, Ray placement, retries, resume and teardown; the real
engine is tested in tests/engine. One fake cluster (nodes with 8, 8 and 4 fake
GPUs) is shared by the whole test session: it takes ~15 s to start.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest
import ray
from ray.cluster_utils import Cluster

STUB_MODULE = "tests.stubs.stub_engine"
LOOPBACK = "127.0.0.1"


def add_fake_node(fake: Cluster, gpus: int, tries: int = 3) -> None:
    """A fake node of 8 CPUs and `gpus` GPUs, tried again where Ray's own start times out.

    On a loaded 2-core box a new raylet can give up waiting for its agent's port file and
    abort (CI rehearsal 2026-12-07: "Timed out waiting for file .../metrics_agent_port",
    then RPC Deadline Exceeded, in the test that restores a removed node, while a 27-minute
    simulation shared the box); that is the machine's load, not the grid's, so it is retried.
    """
    for attempt in range(1, tries + 1):
        try:
            fake.add_node(num_cpus=8, num_gpus=gpus)
            return
        except Exception:
            if attempt == tries:
                raise
            time.sleep(5)


@pytest.fixture(scope="session")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    # Loopback only (tests/conftest.py): the fake nodes are processes on this machine.
    # No dashboard: nothing here reads it (the grid joins with include_dashboard=False too), and its
    # nine processes would start and idle beside every test.
    fake = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 0, "include_dashboard": False}
    )
    for gpus in (8, 8, 4):
        add_fake_node(fake, gpus)
    fake.wait_for_nodes()
    assert fake.address.startswith(LOOPBACK), fake.address
    ray.init(address=fake.address)
    yield fake
    ray.shutdown()
    fake.shutdown()


@pytest.fixture
def inputs(tmp_path):
    """A model folder and two small corpora, so no real assets are needed."""
    models = tmp_path / "models"
    (models / "SmolLM2-135M-Instruct").mkdir(parents=True)
    (models / "SmolLM2-135M-Instruct" / "config.json").write_text("{}")
    # Preflight wants a weights file beside it (the stand-in engine reads neither).
    (models / "SmolLM2-135M-Instruct" / "model.safetensors").write_bytes(b"")
    data = tmp_path / "data"
    (data / "corpora").mkdir(parents=True)
    for name in ("code_complete", "chat_bench"):
        # Distinct texts per corpus, enough for warm-up + measured: every measured prompt new to its engine.
        rows = [{"id": f"{name}-{i}", "prompt": f"{name} prompt {i}"} for i in range(12)]
        (data / "corpora" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def stub_overrides(root: Path, cluster: Cluster | object, *extra: str) -> list[str]:
    """Overrides that run the smoke grid on the stub engine against the fake cluster."""
    return [
        "experiment=smoke",
        f"paths.store={root / 'store'}",
        f"paths.models_dir={root / 'models'}",
        f"paths.data_dir={root / 'data'}",
        f"ray.address={cluster.address}",
        "ray.use_gpus=true",
        "ray.cpus_per_engine=1",
        f"engine.command=['{{python}}',-m,{STUB_MODULE}]",
        "engine.env={}",
        "engine.start_timeout_s=30",
        "load.num_prompts=6",
        "load.warmup_requests=1",
        "load.concurrency=3",
        "load.max_tokens=8",
        # The drift anchor adds two launches; its own test turns it on.
        "grid.anchor.enabled=false",
        # Every corpus at load.num_prompts (smoke gives chat_bench 40 for the demo's windows).
        "~grid.num_prompts.chat_bench",
        # One launch per engine spec, so launch counts below are the spec counts.
        "grid.engine_reuse=per_spec",
        # These tests are about scheduling and resume, not gates: a loaded machine's
        # event-loop lag must not turn a cell INVALID and so rerun it on resume.
        "run.keep_invalid=true",
        *extra,
    ]


def stub_processes() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if (
            STUB_MODULE in " ".join(proc.info["cmdline"] or [])
            and proc.info["status"] != psutil.STATUS_ZOMBIE
        ):
            found.append(proc)
    return found


def live_placement_groups() -> list[str]:
    return [pg_id for pg_id, pg in ray.util.placement_group_table().items() if pg["state"] != "REMOVED"]


@pytest.fixture
def no_leaks(cluster):
    """After the test: no stand-in engine left running, no placement group left."""
    yield
    _, alive = psutil.wait_procs(stub_processes(), timeout=10)
    assert not alive, f"orphaned engine processes: {[p.pid for p in alive]}"
    assert not live_placement_groups()

"""Faults the driver must survive, each with the store checked afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pandas as pd
from rich.console import Console

from grid.orchestrate.ledger import DONE, INVALID, build_ledger
from grid.orchestrate.run import run
from store.layout import StoreLayout
from store.read import attempts, ok_files
from tests.scheduling.conftest import add_fake_node, stub_overrides

CELLS = 4  # smoke: 2 levers x 2 corpora
# A cell with a result: the stand-in's short windows leave smoke cells INVALID (kept: run.keep_invalid).
MEASURED = (DONE, INVALID)


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"), width=160)


def ok_counts(root):
    found, _ = attempts(root / "store")
    counts = {}
    for a in found:
        if a.status == "ok":
            counts[a.cell_key] = counts.get(a.cell_key, 0) + 1
    return counts


def test_grid_runs_on_the_fake_cluster_with_gpu_bundles(cluster, inputs, no_leaks):
    assert run(stub_overrides(inputs, cluster), quiet()) == 0
    assert sorted(ok_counts(inputs).values()) == [1] * CELLS


def test_the_drift_anchor_runs_before_every_cell_and_after_every_cell(cluster, inputs, no_leaks):
    assert run(stub_overrides(inputs, cluster, "grid.anchor.enabled=true"), quiet()) == 0
    found, _ = attempts(inputs / "store")
    written = {}
    for a in found:
        summary = pd.read_parquet(a.folder / "summary.parquet").iloc[0]
        written[summary["anchor"] or "cell"] = [
            *written.get(summary["anchor"] or "cell", []),
            (a.folder / "manifest.json").stat().st_mtime_ns,
        ]
    assert len(written["start"]) == 1 and len(written["end"]) == 1 and len(written["cell"]) == CELLS
    assert written["start"][0] < min(written["cell"]) and max(written["cell"]) < written["end"][0]


def test_engine_killed_mid_cell_is_retried_without_partial_rows(cluster, inputs, no_leaks):
    marker = inputs / "died-once"
    code = run(
        stub_overrides(
            inputs,
            cluster,
            "+engine.env.STUB_DIE_AFTER=3",
            f"+engine.env.STUB_DIE_ONCE_FILE={marker}",
            "grid.levers=[van]",
            "run.max_attempts=2",
        ),
        quiet(),
    )
    assert code == 0
    assert marker.exists()
    found, _ = attempts(inputs / "store")
    failed = [a for a in found if a.status == "failed"]
    assert failed, "the killed attempt is recorded"
    manifest = (failed[0].folder / "manifest.json").read_text()
    assert "stub: dying after 3 requests" in manifest  # the log tail travels with the failure
    requests = pd.concat(pd.read_parquet(p) for p in ok_files(inputs / "store", "requests.parquet"))
    # Two cells x num_prompts measured (and one warm-up request each), nothing from the dead attempt.
    assert requests["phase"].value_counts().to_dict() == {"measure": 2 * 6, "warmup": 2}
    assert requests["error_type"].isna().all()


def test_engine_hanging_at_start_times_out_and_fails_cleanly(cluster, inputs, no_leaks):
    code = run(
        stub_overrides(
            inputs,
            cluster,
            "+engine.env.STUB_HANG_AT_START=1",
            "engine.start_timeout_s=3",
            "grid.levers=[van]",
            "run.max_attempts=1",
        ),
        quiet(),
    )
    assert code == 1
    found, _ = attempts(inputs / "store")
    assert [a.status for a in found] == ["failed", "failed"]
    assert all("not ready after 3 s" in (a.error or "") for a in found)


def kill_driver_after_first_cell(overrides: list[str], stored: Callable[[], dict]) -> None:
    """Start `grid run` as a subprocess and SIGKILL it once `stored()` shows a cell (mid-grid)."""
    driver = subprocess.Popen(
        [sys.executable, "-m", "grid", "run", *overrides],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while not stored() and time.time() < deadline:
        time.sleep(0.2)
    driver.send_signal(signal.SIGKILL)
    driver.wait()


def test_driver_killed_mid_grid_then_rerun_does_only_the_rest(cluster, inputs, no_leaks):
    overrides = stub_overrides(inputs, cluster, "+engine.env.STUB_DELAY_S=0.05", "ray.max_in_flight=1")
    kill_driver_after_first_cell(overrides, lambda: ok_counts(inputs))
    done_before = set(ok_counts(inputs))
    assert 0 < len(done_before) < CELLS
    assert run(overrides, quiet()) == 0
    counts = ok_counts(inputs)
    assert sorted(counts.values()) == [1] * CELLS  # every cell once: no duplicates


def test_corrupt_parquet_is_reported_ignored_and_rerun(cluster, inputs, no_leaks):
    overrides = stub_overrides(inputs, cluster, "grid.levers=[van]")
    assert run(overrides, quiet()) == 0
    found, _ = attempts(inputs / "store")
    victim = found[0]
    path = victim.folder / "requests.parquet"
    path.write_bytes(path.read_bytes()[:100])
    ledger = build_ledger(inputs / "store")
    assert ledger.status(victim.cell_key) not in MEASURED
    assert any("unreadable" in p for p in ledger.problems)
    assert run(overrides, quiet()) == 0
    assert build_ledger(inputs / "store").status(victim.cell_key) in MEASURED
    assert sum(ok_counts(inputs).values()) == 3  # the other cell was not rerun


def test_unwritable_store_fails_the_cell_and_keeps_earlier_results(cluster, inputs, no_leaks):
    assert run(stub_overrides(inputs, cluster, "grid.levers=[van]"), quiet()) == 0
    before = {p: p.read_bytes() for p in (inputs / "store").rglob("*.parquet")}
    # The suffix cells' folders cannot be created: a file sits where a folder must go.
    overrides = stub_overrides(inputs, cluster, "run.max_attempts=1")
    cells_dir = StoreLayout(inputs / "store").root / "cells"
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config

    for cell in expand(to_config(compose_config(overrides))):
        if cell.engine_spec.lever.name == "suffix":
            (cells_dir / cell.key).write_text("not a folder")
    assert run(overrides, quiet()) == 1
    assert {p: p.read_bytes() for p in (inputs / "store").rglob("*.parquet")} == before


def test_node_removed_mid_run_requeues_its_cells(cluster, inputs, no_leaks):
    overrides = stub_overrides(
        inputs,
        cluster,
        "+engine.env.STUB_DELAY_S=0.1",
        "grid.levers=[van]",
        "ray.max_in_flight=1",
        "run.max_attempts=2",
    )
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", run(overrides, quiet())))
    thread.start()
    victim = None
    deadline = time.time() + 60
    import ray

    while victim is None and time.time() < deadline:
        for pg in ray.util.placement_group_table().values():
            if pg["state"] == "CREATED":
                node_id = pg["bundles_to_node_id"][0]
                victim = next((n for n in cluster.worker_nodes if n.node_id == node_id), None)
        time.sleep(0.1)
    assert victim is not None
    cluster.remove_node(victim, allow_graceful=False)
    thread.join(180)
    add_fake_node(cluster, 8)  # restore the cluster's shape for later tests
    assert result["code"] == 0
    found, _ = attempts(inputs / "store")
    assert any(a.status == "failed" and "worker lost" in (a.error or "") for a in found)
    assert sorted(ok_counts(inputs).values()) == [1, 1]


def test_every_engine_spec_lands_on_a_node_with_enough_gpus(cluster, inputs, no_leaks):
    import ray

    overrides = stub_overrides(
        inputs,
        cluster,
        "grid.models=[llama31_405b_fp8,llama31_70b,tiny]",
        "grid.levers=[van]",
        "grid.corpora=[code_complete]",
        "engine=gpu",
        "engine.command=['{python}',-m,tests.stubs.stub_engine]",
        "engine.start_timeout_s=30",
    )
    assert run(overrides, quiet()) == 0
    node_gpus = {n["NodeID"]: n["Resources"].get("GPU", 0) for n in ray.nodes()}
    cells = pd.concat(pd.read_parquet(p) for p in ok_files(inputs / "store", "summary.parquet"))
    tp = {"llama31_405b_fp8": 8, "llama31_70b": 2, "tiny": 1}
    assert set(cells["model"]) == set(tp)
    for row in cells.itertuples():
        assert node_gpus[row.node_id] >= tp[row.model]
        assert len(row.cuda_visible_devices.split(",")) == tp[row.model]


def test_concurrent_engines_on_one_host_get_distinct_ports(cluster, inputs, no_leaks):
    overrides = stub_overrides(inputs, cluster, "+engine.env.STUB_DELAY_S=0.05", "ray.max_in_flight=2")
    assert run(overrides, quiet()) == 0
    logs = sorted((inputs / "store" / "logs").rglob("*.log"))
    ports = [log.read_text().split("--port ", 1)[1].split()[0] for log in logs]
    assert len(logs) == 2 and len(set(ports)) == 2
    requests = pd.concat(pd.read_parquet(p) for p in ok_files(inputs / "store", "requests.parquet"))
    summary = pd.concat(pd.read_parquet(p) for p in ok_files(inputs / "store", "summary.parquet"))
    requests = requests.merge(summary[["cell_key", "lever"]], on="cell_key")
    spans = requests.groupby("lever").agg(start=("send_ns", "min"), end=("end_ns", "max"))
    van, suffix = spans.loc["van"], spans.loc["suffix"]
    assert van.start < suffix.end and suffix.start < van.end, "the two launches ran at the same time"

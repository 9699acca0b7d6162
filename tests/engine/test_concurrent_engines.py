"""Two real engines at once on one node: no port collisions, vLLM's own ports included."""

from __future__ import annotations

import os

import pandas as pd
from rich.console import Console

from grid.run import run
from store.read import ok_files
from tests.engine.conftest import engine_processes


def test_two_real_engines_run_side_by_side(tmp_path):
    # cpus_per_engine=1 lets the 2-CPU local cluster hold both launches at once.
    code = run(
        [
            "experiment=smoke",
            "grid.levers=[van,van_noasync]",
            "grid.corpora=[code_complete]",
            f"paths.store={tmp_path}",
            "ray.cpus_per_engine=1",
            "load.num_prompts=16",
            "load.warmup_requests=1",
            "load.concurrency=2",
            "load.max_tokens=32",
        ],
        Console(file=open(os.devnull, "w")),  # noqa: SIM115
    )
    assert code == 0
    logs = sorted((tmp_path / "logs").rglob("*.log"))
    assert len(logs) == 2
    text = [log.read_text(errors="replace") for log in logs]
    assert not any("Address already in use" in t for t in text)
    ports = [t.split("--port ", 1)[1].split()[0] for t in text]
    assert ports[0] != ports[1]
    requests = pd.concat(pd.read_parquet(p) for p in ok_files(tmp_path, "requests.parquet"))
    summary = pd.concat(pd.read_parquet(p) for p in ok_files(tmp_path, "summary.parquet"))
    requests = requests.merge(summary[["cell_key", "lever"]], on="cell_key")
    spans = requests.groupby("lever").agg(start=("send_ns", "min"), end=("end_ns", "max"))
    a, b = spans.loc["van"], spans.loc["van_noasync"]
    assert a.start < b.end and b.start < a.end, "the two engines served at the same time"
    assert not engine_processes()

"""What an object store costs: the stand-in smoke grid with its store on a local folder and on S3.

Starts the scheduling tests' fake cluster (3 nodes, 8/8/4 fake GPUs) and a
local S3 server (moto, tests/s3server.py), then runs the smoke grid on the
stand-in engine (tests/stubs/stub_engine.py) ROUNDS times on each store,
alternating, each run a fresh store; and reads each finished store back
(build_ledger: resume's read with checksums; connect: every view). Prints the
median and range per store and the S3 / local ratio.

  python -m benchmarks.store_overhead            # ROUNDS=3 by default
  python -m benchmarks.store_overhead --cpu      # the real CPU engine instead (ROUNDS=2 by default)

With --cpu the grid is the CPU smoke grid cut to one cell (tiny x code_complete
x van, no drift anchor: one engine launch, ~2 minutes) on a local Ray cluster:
the object store's cost beside a real engine's start and load.

moto is an in-memory S3 on this machine: it shows the harness's own cost of
the object-store path (uploads from temp files, a read-back hash, listing,
Parquet through pyarrow, lease PUT + read-back), not a real bucket's latency.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
from tests.s3server import FAKE_CREDENTIALS

for _key, _value in FAKE_CREDENTIALS.items():
    os.environ.setdefault(_key, _value)

CPU_GRID = [
    "experiment=smoke",
    "grid.levers=[van]",
    "grid.corpora=[code_complete]",
    "grid.anchor.enabled=false",
]


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def stand_in_inputs(inputs: Path) -> None:
    """The stand-in engine's model folder and two small corpora under `inputs`."""
    import json

    models = inputs / "models" / "SmolLM2-135M-Instruct"
    models.mkdir(parents=True)
    (models / "config.json").write_text("{}")
    (inputs / "data" / "corpora").mkdir(parents=True)
    for name in ("code_complete", "chat_bench"):
        rows = [{"id": f"{name}-{i}", "prompt": f"{name} prompt {i}"} for i in range(12)]
        (inputs / "data" / "corpora" / f"{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows)
        )


def main() -> int:
    import ray
    from ray.cluster_utils import Cluster

    from grid.orchestrate.drive import drive
    from grid.orchestrate.ledger import build_ledger
    from store.fs import open_store
    from store.read import connect
    from tests.s3server import moto_server, new_bucket, options_override, store_options

    cpu = "--cpu" in sys.argv[1:]
    rounds = int(os.environ.get("ROUNDS", "2" if cpu else "3"))
    quiet = Console(file=open(os.devnull, "w"), width=160)  # noqa: SIM115
    fake = None
    if not cpu:
        fake = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 0})
        for gpus in (8, 8, 4):
            fake.add_node(num_cpus=8, num_gpus=gpus)
        fake.wait_for_nodes()
        ray.init(address=fake.address)
    times: dict[str, dict[str, list[float]]] = {
        k: {"run": [], "ledger": [], "connect": []} for k in ("local", "s3")
    }
    try:
        with moto_server() as endpoint, tempfile.TemporaryDirectory() as tmp:
            inputs = Path(tmp)
            if cpu:
                base = CPU_GRID
            else:
                from tests.scheduling.conftest import stub_overrides

                stand_in_inputs(inputs)
                base = [o for o in stub_overrides(inputs, fake) if not o.startswith("paths.store=")]
            for index in range(rounds):
                for kind in ("local", "s3"):
                    if kind == "local":
                        store = inputs / f"store-{index}"
                        extra, root = [f"paths.store={store}"], store
                    else:
                        url = f"s3://{new_bucket(endpoint)}/results"
                        extra = [f"paths.store={url}", *options_override(endpoint)]
                        root = open_store(url, store_options(endpoint))
                    seconds = timed(lambda base=base, extra=extra: drive([*base, *extra], quiet))
                    times[kind]["run"].append(seconds)
                    times[kind]["ledger"].append(timed(lambda root=root: build_ledger(root)))
                    times[kind]["connect"].append(timed(lambda root=root: connect(root)))
                    print(f"round {index + 1} {kind}: grid run {seconds:.2f} s", file=sys.stderr)
    finally:
        ray.shutdown()
        if fake is not None:
            fake.shutdown()
    for what in ("run", "ledger", "connect"):
        local, s3 = (statistics.median(times[k][what]) for k in ("local", "s3"))
        spread = {k: f"{min(times[k][what]):.2f}-{max(times[k][what]):.2f}" for k in times}
        print(
            f"{what:8s} local {local:7.3f} s ({spread['local']})  s3 {s3:7.3f} s ({spread['s3']})  "
            f"s3/local {s3 / local:5.2f}x  (+{s3 - local:.2f} s), median of {rounds}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

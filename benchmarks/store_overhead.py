"""What an object store costs: the stand-in smoke grid with its store on a local folder and on S3.

Starts the scheduling tests' fake cluster (3 nodes, 8/8/4 fake GPUs) and a
local S3 server (moto, tests/s3server.py), then runs the smoke grid on the
stand-in engine (tests/stubs/stub_engine.py) ROUNDS times on each store,
alternating, each run a fresh store; and reads each finished store back
(build_ledger: resume's read with checksums; connect: every view). Prints the
median and range per store and the S3 / local ratio.

  python -m benchmarks.store_overhead            # ROUNDS=3 by default

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

ROUNDS = int(os.environ.get("ROUNDS", "3"))


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> int:
    import json

    import ray
    from ray.cluster_utils import Cluster

    from grid.ledger import build_ledger
    from grid.run import run
    from store.fs import open_store
    from store.read import connect
    from tests.s3server import moto_server, new_bucket, options_override, store_options

    quiet = Console(file=open(os.devnull, "w"), width=160)  # noqa: SIM115
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
            models = inputs / "models" / "SmolLM2-135M-Instruct"
            models.mkdir(parents=True)
            (models / "config.json").write_text("{}")
            (inputs / "data" / "corpora").mkdir(parents=True)
            for name in ("code_complete", "chat_bench"):
                rows = [{"id": f"{name}-{i}", "prompt": f"{name} prompt {i}"} for i in range(12)]
                (inputs / "data" / "corpora" / f"{name}.jsonl").write_text(
                    "".join(json.dumps(r) + "\n" for r in rows)
                )
            from tests.scheduling.conftest import stub_overrides

            for index in range(ROUNDS):
                for kind in ("local", "s3"):
                    base = [o for o in stub_overrides(inputs, fake) if not o.startswith("paths.store=")]
                    if kind == "local":
                        store = inputs / f"store-{index}"
                        extra, root = [f"paths.store={store}"], store
                    else:
                        url = f"s3://{new_bucket(endpoint)}/results"
                        extra = [f"paths.store={url}", *options_override(endpoint)]
                        root = open_store(url, store_options(endpoint))
                    seconds = timed(lambda base=base, extra=extra: run([*base, *extra], quiet))
                    times[kind]["run"].append(seconds)
                    times[kind]["ledger"].append(timed(lambda root=root: build_ledger(root)))
                    times[kind]["connect"].append(timed(lambda root=root: connect(root)))
                    print(f"round {index + 1} {kind}: grid run {seconds:.2f} s", file=sys.stderr)
    finally:
        ray.shutdown()
        fake.shutdown()
    for what in ("run", "ledger", "connect"):
        local, s3 = (statistics.median(times[k][what]) for k in ("local", "s3"))
        spread = {k: f"{min(times[k][what]):.2f}-{max(times[k][what]):.2f}" for k in times}
        print(
            f"{what:8s} local {local:7.3f} s ({spread['local']})  s3 {s3:7.3f} s ({spread['s3']})  "
            f"s3/local {s3 / local:5.2f}x  (+{s3 - local:.2f} s), median of {ROUNDS}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

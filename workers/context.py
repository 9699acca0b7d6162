"""What a worker is given (RunContext) and what it gives back per cell (CellOutcome)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.fs import StoreRoot
from store.space import MIN_FREE_BYTES
from vocab.schema import GateConfig


@dataclass(frozen=True)
class RunContext:
    """Where a worker reads inputs and writes results; the same on every node."""

    session_id: str
    store_root: Path
    cache_dir: Path
    models_dir: Path
    # A folder, or a URL every node reads one copy from (corpora fetched into cache_dir by content).
    data_dir: StoreRoot
    # Validity thresholds; they judge a cell, they do not change its measurement.
    gates: GateConfig = field(default_factory=GateConfig)
    # The Ray node this worker runs on (set by the actor; None outside Ray).
    node_id: str | None = None
    # Room the store needs before each engine start (run.min_store_free_mb).
    min_store_free_bytes: int = MIN_FREE_BYTES
    # Corpus name -> the sha256 the driver read before launch: a node that reads other bytes stops the cell.
    corpus_sha256: dict[str, str] = field(default_factory=dict)

    def new_attempt_id(self) -> str:
        return f"{self.session_id}-{uuid.uuid4().hex[:8]}"

    def placement(self) -> dict[str, Any]:
        """Where the cell ran: host, Ray node and the GPUs Ray assigned (CUDA_VISIBLE_DEVICES)."""
        return {
            "host": socket.gethostname(),
            "node_id": self.node_id,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }


@dataclass(frozen=True)
class CellOutcome:
    """What became of one cell attempt; failures are data, never exceptions."""

    cell_key: str
    label: str
    attempt_id: str
    status: str  # "ok", "failed" or "interrupted"
    error: str | None = None
    output_tok_per_s: float | None = None
    engine_ready_s: float | None = None
    # The run cannot go on (the store cannot take results): the driver stops, no retry.
    stops_run: bool = False
    # An ok cell's validity verdict and its reasons (workers/signals/gates.py), for the driver's line.
    valid: bool | None = None
    invalid_reasons: str | None = None
    # Whether another attempt could succeed (an engine that died or would not start, a lost worker,
    # a timeout): False where a retry meets the same failure (a changed corpus, a bad config,
    # requests the server refuses), which the driver then does not retry (workers/attempts.py).
    retryable: bool = True
    # INVALID only for the host's sake (workers/signals/gates.py host_bound): the driver measures it
    # again at once, up to run.host_invalid_reruns.
    host_bound: bool = False

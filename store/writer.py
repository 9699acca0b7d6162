"""Write one cell attempt: Parquet data first, the manifest last (each atomically).

The manifest records each data file's size and sha256, computed from the file
as it lies in the store after its rename (store/verify.py checks them on read).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from store.atomic import write_json, write_parquet
from store.layout import MANIFEST, PROBE, REQUESTS, SCHEMA_VERSION, SUMMARY, StoreLayout
from store.records import ProbeRow, RequestRecord
from store.verify import file_entry

# The columns every per-attempt table starts with (the attempt's tags).
TAG_FIELDS = [
    ("schema_version", pa.int32()),
    ("session_id", pa.string()),
    ("cell_key", pa.string()),
    ("attempt_id", pa.string()),
]
REQUEST_SCHEMA = pa.schema(
    [
        *TAG_FIELDS,
        ("request_idx", pa.int64()),
        ("prompt_id", pa.string()),
        ("phase", pa.string()),
        ("send_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("chunk_ns", pa.list_(pa.int64())),
        ("chunk_tokens", pa.list_(pa.int32())),
        ("n_chunks", pa.int64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("finish_reason", pa.string()),
        ("http_status", pa.int64()),
        ("error_type", pa.string()),
        ("error_message", pa.string()),
        ("output_text", pa.string()),
    ]
)


PROBE_SCHEMA = pa.schema(
    [
        *TAG_FIELDS,
        ("prompt_id", pa.string()),
        ("position", pa.int32()),
        ("token_ids", pa.list_(pa.int32())),
        ("logprobs", pa.list_(pa.float32())),
    ]
)


def utc_now() -> str:
    """A manifest's `written_at`, which orders a cell's attempts in the ledger: in microseconds, since
    attempts written within one second (a failure and the interrupted attempt that supersedes it)
    must keep their order; with whole seconds the random attempt id decided. Older whole-second
    stamps sort before any stamp of the same second ('+' < '.')."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def requests_table(records: Sequence[RequestRecord], tags: dict[str, Any]) -> pa.Table:
    rows = [{**tags, "schema_version": SCHEMA_VERSION, **dataclasses.asdict(r)} for r in records]
    return pa.Table.from_pylist(rows, schema=REQUEST_SCHEMA)


def summary_table(summary: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist([{"schema_version": SCHEMA_VERSION, **summary}])


def probe_table(rows: Sequence[ProbeRow], tags: dict[str, Any]) -> pa.Table:
    data = [{**tags, "schema_version": SCHEMA_VERSION, **dataclasses.asdict(r)} for r in rows]
    return pa.Table.from_pylist(data, schema=PROBE_SCHEMA)


def write_ok_attempt(
    layout: StoreLayout,
    tags: dict[str, Any],
    records: Sequence[RequestRecord],
    summary: dict[str, Any],
    probe: Sequence[ProbeRow] = (),
    label: str | None = None,
) -> Path:
    """Store a finished attempt; `tags` holds session_id, cell_key and attempt_id; `label` (the cell's
    name, as `status` and the tables show it) goes into the manifest only."""
    folder = layout.attempt_dir(tags["cell_key"], tags["attempt_id"])
    written = [
        write_parquet(folder / REQUESTS, requests_table(records, tags)),
        write_parquet(folder / SUMMARY, summary_table({**tags, **summary})),
    ]
    if probe:
        written.append(write_parquet(folder / PROBE, probe_table(probe, tags)))
    # Size and sha256 of each file as stored: a reader counts the attempt only if they still match.
    files = [file_entry(path).as_json() for path in written]
    write_json(
        folder / MANIFEST,
        {
            **tags,
            **({"label": label} if label else {}),
            "status": "ok",
            # The validity gates' verdict, so resume can tell INVALID cells without opening Parquet.
            "valid": summary.get("valid"),
            # And why not, so status can say it without opening Parquet.
            "invalid_reasons": summary.get("invalid_reasons"),
            "schema_version": SCHEMA_VERSION,
            "files": files,
            "written_at": utc_now(),
        },
    )
    return folder


def write_failed_attempt(
    layout: StoreLayout,
    tags: dict[str, Any],
    error: str,
    log_tail: str,
    status: str = "failed",
    label: str | None = None,
    retryable: bool | None = None,
) -> Path:
    """Record a failed (or interrupted) attempt: a manifest only, so no partial rows are ever read.

    `retryable`: whether another attempt could succeed (workers/attempts.py), for a failure.
    """
    folder = layout.attempt_dir(tags["cell_key"], tags["attempt_id"])
    for name in (REQUESTS, SUMMARY, PROBE):
        (folder / name).unlink(missing_ok=True)
    write_json(
        folder / MANIFEST,
        {
            **tags,
            **({"label": label} if label else {}),
            "status": status,
            "schema_version": SCHEMA_VERSION,
            "error": error,
            **({"retryable": retryable} if retryable is not None else {}),
            "log_tail": log_tail,
            "files": [],
            "written_at": utc_now(),
        },
    )
    return folder

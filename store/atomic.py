"""Atomic file writes: a temp file in the target folder, fsynced, then renamed.

A reader sees the old file or the whole new one, never half of one; a crash
leaves at most a `.tmp-*` file, which readers ignore.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TMP_PREFIX = ".tmp-"


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temp path beside `target`; rename it onto `target` only if the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=target.suffix, dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(target: Path, writer: Callable[[Path], None]) -> Path:
    with atomic_path(target) as tmp:
        writer(tmp)
    return target


def write_parquet(target: Path, table: pa.Table) -> Path:
    return write_atomic(target, lambda tmp: pq.write_table(table, tmp))


def write_json(target: Path, value: Any) -> Path:
    return write_atomic(target, lambda tmp: tmp.write_text(json.dumps(value, indent=2, sort_keys=True)))

"""Can the store take a cell's results? Checked before every engine start (workers/runner.py).

A store that is read-only, missing or full would otherwise be found out only
after an engine start and a full measurement whose results cannot be written;
the driver stops the run on the first such answer instead of retrying.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

from store.fs import StorePath, StoreRoot

# Room a cell needs: a study cell's files are ~5 MB (512 requests x 8192 tokens of
# per-chunk timings and text); the margin covers the engine log and the next cells.
MIN_FREE_BYTES = 256 * 2**20
# Every problem line starts with this, so a reader can tell it from a cell's own failure.
STORE_UNUSABLE = "store cannot take results"


def store_problem(root: StoreRoot, min_free_bytes: int = MIN_FREE_BYTES) -> str | None:
    """Why `root` cannot take a cell's results now (one line), or None when it can."""
    cells = root / "cells"  # where results go (store/layout.py)
    if isinstance(root, StorePath):
        return _object_store_problem(cells)
    try:
        cells.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".write-probe-", dir=cells)
        try:
            os.write(handle, b"0")
        finally:
            os.close(handle)
            os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return (
            f"{STORE_UNUSABLE}: {root} is not writable ({reason}); "
            "fix its permissions or point paths.store at a writable folder"
        )
    free = shutil.disk_usage(root).free
    if free < min_free_bytes:
        return (
            f"{STORE_UNUSABLE}: {root} has {free / 2**20:,.0f} MiB free, less than the "
            f"{min_free_bytes / 2**20:,.0f} MiB a cell needs; free space or point paths.store elsewhere"
        )
    return None


def _object_store_problem(cells: StorePath) -> str | None:
    """An object store: can a probe object be written and removed? (It has no free space to check.)"""
    probe = cells / f".write-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.write_bytes(b"0")
        probe.unlink(missing_ok=True)
    except OSError as exc:
        return (
            f"{STORE_UNUSABLE}: {cells.parent} is not writable ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200]}); check the bucket, its endpoint and the credentials "
            "in the environment"
        )
    return None

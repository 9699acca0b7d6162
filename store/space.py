"""Can the store take a cell's results? Checked before every engine start (workers/runner.py).

A store that is read-only, missing or full would otherwise be found out only
after an engine start and a full measurement whose results cannot be written;
the driver stops the run on the first such answer instead of retrying.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import uuid
from pathlib import Path

from store.fs import StorePath, StoreRoot, StoreUnreachable, aws_reason

# Room a cell needs: a study cell's files are ~5 MB (512 requests x 8192 tokens of
# per-chunk timings and text); the margin covers the engine log and the next cells.
MIN_FREE_BYTES = 256 * 2**20
# Every problem line starts with this, so a reader can tell it from a cell's own failure.
STORE_UNUSABLE = "store cannot take results"


# The probe writes this many real bytes and syncs them: an empty file can still be created on a
# full disk (its inode is free), so a probe of 0 or 1 bytes passes where the session file then fails.
PROBE_BYTES = 64 * 2**10
# errno of a disk that is full (or a quota reached): free space, not permissions, is the fix.
FULL = (errno.ENOSPC, errno.EDQUOT)


def write_probe(folder: Path) -> None:
    """Create, fill (PROBE_BYTES, synced) and remove a temp file in `folder`; raise OSError if it can't."""
    handle, probe = tempfile.mkstemp(prefix=".write-probe-", dir=folder)
    try:
        os.write(handle, b"\0" * PROBE_BYTES)
        os.fsync(handle)
    finally:
        os.close(handle)
        os.unlink(probe)


def write_failure(root: object, exc: OSError, verb: str = "is not writable", where: str = "") -> str:
    """Why `root` could not be written, with the fix that fits the errno: a full disk or quota wants
    space, a read-only filesystem or a denial wants another folder (or permissions); `where` follows
    the reason (e.g. "; it would be made in /data")."""
    reason = (exc.strerror or type(exc).__name__) + where
    if exc.errno in FULL:
        return f"{root} is full ({reason}); free space there or point paths.store at another disk"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{root} {verb} ({reason}); fix its permissions or point paths.store at a writable folder"
    return f"{root} {verb} ({reason}); point paths.store at a writable folder (e.g. paths.store=results)"


def store_problem(root: StoreRoot, min_free_bytes: int = MIN_FREE_BYTES) -> str | None:
    """Why `root` cannot take a cell's results now (one line), or None when it can."""
    cells = root / "cells"  # where results go (store/layout.py)
    if isinstance(root, StorePath):
        return _object_store_problem(cells)
    try:
        cells.mkdir(parents=True, exist_ok=True)
        write_probe(cells)
    except OSError as exc:
        return f"{STORE_UNUSABLE}: {write_failure(root, exc)}"
    if (short := space_problem(root, min_free_bytes)) is not None:
        return f"{STORE_UNUSABLE}: {short}"
    return None


def space_problem(root: Path, min_free_bytes: int) -> str | None:
    """`root` has less than `min_free_bytes` free (a line), or None."""
    free = shutil.disk_usage(root).free
    if free < min_free_bytes:
        return (
            f"{root} has {free / 2**20:,.0f} MiB free, less than the {min_free_bytes / 2**20:,.0f} MiB "
            "a cell needs (run.min_store_free_mb); free space or point paths.store elsewhere"
        )
    return None


def _object_store_problem(cells: StorePath) -> str | None:
    """An object store: can a probe object be written and removed? (It has no free space to check.)"""
    probe = cells / f".write-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.write_bytes(b"0")
        probe.unlink(missing_ok=True)
    except OSError as exc:
        cause = exc.__cause__ if isinstance(exc, StoreUnreachable) and exc.__cause__ else exc
        return (
            f"{STORE_UNUSABLE}: {cells.parent} is not writable ({type(cause).__name__}: "
            f"{aws_reason(cause)}) at {cells.store.endpoint()}; check the bucket, its endpoint and the "
            "credentials in the environment"
        )
    return None

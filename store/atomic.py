"""Atomic file writes: a temp file in the target folder, fsynced, then renamed.

A reader sees the old file or the whole new one, never half of one; a crash
leaves at most a `.tmp-*` file, which readers ignore. The file ends with the
mode any new file gets (0666 less the umask), not mkstemp's private 0600, so
teammates can read a shared store; folders are made under the same umask.
On an object store (store/fs.py) a file is uploaded whole from a local temp file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from store.fs import StorePath, StoreRoot, local_copy_dir

P = TypeVar("P", Path, StorePath)

TMP_PREFIX = ".tmp-"


def finished(paths: Iterable[P]) -> list[P]:
    """`paths` without the temp files of writes in progress (another driver's, or a crashed one's).

    A folder listing (`glob("*.json")` matches dot files) can show another
    driver's temp file that is renamed away a moment later: read, it is half a
    file or gone (CI: DuckDB's "No files found" for a session's temp file).
    """
    return [path for path in paths if not path.name.startswith(TMP_PREFIX)]


def current_umask() -> int:
    """The process's umask, read without changing it (Linux: /proc/self/status) where possible.

    os.umask can only be read by setting it, which would briefly change it for
    every thread; that is the fallback where /proc does not say.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temp path beside `target`; rename it onto `target` only if the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=target.suffix, dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp made it 0600 (and a writer may have made it anew): the mode of any new file.
        os.chmod(tmp, 0o666 & ~current_umask())
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(target: StoreRoot, writer: Callable[[Path], None]) -> StoreRoot:
    """Write `target` whole: locally a temp file renamed onto it; on an object store
    (store/fs.py) a local temp file uploaded whole, visible only once complete."""
    if isinstance(target, StorePath):
        with local_copy_dir() as folder:
            tmp = folder / f"{TMP_PREFIX}{target.name}"
            writer(tmp)
            target.store.put_file(tmp, target.key)
        return target
    with atomic_path(target) as tmp:
        writer(tmp)
    return target


def delta_column(field: pa.Field) -> bool:
    """A nanosecond time column (`*_ns`, integers or a list of them): stored as deltas."""
    kind = field.type.value_type if pa.types.is_list(field.type) else field.type
    return field.name.endswith("_ns") and pa.types.is_integer(kind)


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """How a store table is written. A requests table is mostly its streams' chunk times (`chunk_ns`):
    on an H100 tune's van run (192 streams, 206k chunks) 1.46 MB as dictionary + snappy, 0.62 MB as
    deltas + zstd, written in 0.24-0.80x the time (docs/store.md). Deltas suit times that rise along a
    stream; every other column keeps its dictionary. pyarrow, pandas and DuckDB read both."""
    deltas = [f for f in schema if delta_column(f)]
    # The encoding is set on Parquet's leaf column: a list's values are `<name>.list.element` (a
    # top-level name would leave them PLAIN without a word).
    leaves = [f"{f.name}.list.element" if pa.types.is_list(f.type) else f.name for f in deltas]
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema if f not in deltas],
        "column_encoding": dict.fromkeys(leaves, "DELTA_BINARY_PACKED"),
    }


def write_parquet(target: StoreRoot, table: pa.Table) -> StoreRoot:
    options = parquet_options(table.schema)
    return write_atomic(target, lambda tmp: pq.write_table(table, tmp, **options))


def write_json(target: StoreRoot, value: Any) -> StoreRoot:
    return write_atomic(target, lambda tmp: tmp.write_text(json.dumps(value, indent=2, sort_keys=True)))

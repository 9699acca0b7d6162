"""Is an ok attempt whole? Its manifest records each file's size and sha256; check them.

Manifests written since issue 17 list `files` as
`[{"name": "requests.parquet", "bytes": 1234, "sha256": "<hex>"}, ...]`, computed
from the files as they lie in the store after their atomic rename. Older
manifests list names only; their files get the older check alone (the Parquet
footer opens), which catches truncation but not bytes changed in the middle.

Checks, cheapest first: the file exists; its size equals the recorded one (a
stat); its sha256 equals the recorded one (reads the whole file, about 2 GB/s
here; `checksums=False` skips it). A file of an older manifest, with no size
or checksum recorded, must open as Parquet (footer read).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from store.fs import StorePath, StoreRoot
from store.layout import PROBE, REQUESTS, SUMMARY

HASH = "sha256"
# Digests of files last modified at least this long before they were hashed are remembered for
# the process (keyed by path, size, mtime, ctime, inode): any later write changes the mtime.
SETTLED_S = 2.0
_digests: dict[tuple[str, int, int, int, int], str] = {}


@dataclass(frozen=True)
class FileEntry:
    """One file of an attempt as its manifest records it (bytes/sha256 None in older manifests)."""

    name: str
    bytes: int | None = None
    sha256: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.bytes, HASH: self.sha256}


@dataclass(frozen=True)
class Damage:
    """An ok attempt left out because one of its files is not what was written."""

    cell_key: str
    attempt_id: str
    path: Path
    what: str
    session_id: str = ""

    @property
    def file(self) -> str:
        return self.path.name

    def __str__(self) -> str:
        return (
            f"cell {self.cell_key} attempt {self.attempt_id}: {self.path}: unreadable ({self.what}); "
            "the attempt does not count"
        )

    def short(self) -> str:
        """Attempt, file and what is wrong (for tables that name the cell already)."""
        return f"attempt {self.attempt_id}: {self.file} unreadable ({self.what})"


def sha256_file(path: StoreRoot) -> str:
    """Hex sha256 of the file's bytes (remembered for settled files, see SETTLED_S)."""
    before = path.stat()
    key = (str(path), before.st_size, before.st_mtime_ns, before.st_ctime_ns, before.st_ino)
    if (known := _digests.get(key)) is not None:
        return known
    if isinstance(path, StorePath):  # an object: read through pyarrow's filesystem
        hasher = hashlib.new(HASH)
        with path.open_input() as handle:
            while chunk := handle.read(8 * 2**20):
                hasher.update(chunk)
        digest = hasher.hexdigest()
    else:
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, HASH).hexdigest()
    settled = time.time() - before.st_mtime_ns / 1e9 >= SETTLED_S
    if settled and path.stat().st_mtime_ns == before.st_mtime_ns:
        _digests[key] = digest
    return digest


def file_entry(path: StoreRoot) -> FileEntry:
    """The manifest entry of a file as it lies in the store now."""
    return FileEntry(path.name, path.stat().st_size, sha256_file(path))


def parse_files(raw: object) -> tuple[FileEntry, ...] | None:
    """A manifest's `files`: entries (new) or names (older); None when absent or not a list."""
    if not isinstance(raw, list):
        return None
    entries = []
    for item in raw:
        if isinstance(item, str):
            entries.append(FileEntry(item))
        elif isinstance(item, Mapping) and isinstance(item.get("name"), str):
            size, digest = item.get("bytes"), item.get(HASH)
            entries.append(
                FileEntry(
                    item["name"],
                    size if isinstance(size, int) else None,
                    digest if isinstance(digest, str) else None,
                )
            )
        else:
            raise ValueError(f"unrecognised entry in manifest files: {item!r}")
    return tuple(entries)


def expected_files(folder: Path, files: tuple[FileEntry, ...] | None) -> Iterable[FileEntry]:
    """What an ok attempt must hold: its manifest's list; for manifests without one, the data files."""
    if files is not None:
        return files
    probe = [FileEntry(PROBE)] if (folder / PROBE).exists() else []
    return [FileEntry(REQUESTS), FileEntry(SUMMARY), *probe]


def check_file(path: Path, entry: FileEntry, checksums: bool) -> str | None:
    """None if the file is as its entry records; else what is wrong, in words."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    if entry.bytes is not None and size != entry.bytes:
        return f"size mismatch: {size:,} bytes, manifest {entry.bytes:,}"
    if checksums and entry.sha256 is not None:
        try:
            digest = sha256_file(path)
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}"
        if digest != entry.sha256:
            return f"checksum mismatch: sha256 {digest[:12]}.., manifest {entry.sha256[:12]}.."
        return None
    if entry.sha256 is None and path.suffix == ".parquet":  # older manifests: the footer must open
        try:
            pq.read_metadata(path.open_input() if isinstance(path, StorePath) else path)
        except (OSError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


def check_attempt(
    cell_key: str,
    attempt_id: str,
    folder: Path,
    files: tuple[FileEntry, ...] | None,
    checksums: bool = True,
    session_id: str = "",
) -> Damage | None:
    """The first damaged file of an ok attempt, or None when every file is whole."""
    for entry in expected_files(folder, files):
        path = folder / entry.name
        if (what := check_file(path, entry, checksums)) is not None:
            return Damage(cell_key, attempt_id, path, what, session_id)
    return None

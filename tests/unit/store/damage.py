"""Ways to damage a stored Parquet file, for the store-integrity tests (issue 17)."""

from __future__ import annotations

import random
from pathlib import Path


def data_region(path: Path) -> tuple[int, int]:
    """[start, end) of the bytes between the leading magic and the footer (its length and magic last)."""
    data = path.read_bytes()
    footer = int.from_bytes(data[-8:-4], "little")
    return 4, len(data) - 8 - footer


def flip_middle(path: Path, count: int = 8) -> None:
    """Invert `count` bytes in the middle of the data pages: same size, the footer still opens."""
    data = bytearray(path.read_bytes())
    start, end = data_region(path)
    middle = (start + end) // 2
    for i in range(middle, middle + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def scramble_pages(path: Path, seed: int = 17) -> None:
    """Overwrite every data page with random bytes, as a bad disk or a stray write would; size and
    footer unchanged, so only a checksum (or reading the pages) can tell."""
    data = bytearray(path.read_bytes())
    start, end = data_region(path)
    data[start:end] = random.Random(seed).randbytes(end - start)
    path.write_bytes(bytes(data))


def truncate(path: Path, keep: float = 0.5) -> None:
    """Cut the file to `keep` of its size."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def names_only(manifest: Path) -> None:
    """Rewrite a manifest as harness versions before issue 17 wrote it: `files` as names only."""
    import json

    data = json.loads(manifest.read_text())
    data["files"] = [entry["name"] if isinstance(entry, dict) else entry for entry in data["files"]]
    manifest.write_text(json.dumps(data))

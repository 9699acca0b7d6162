"""scripts/gpu/store_parts.py: a store kept in git as parts, each holding only what a device run added."""

from __future__ import annotations

import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

from vocab.paths import project_path

spec = importlib.util.spec_from_file_location("store_parts", project_path("scripts/gpu/store_parts.py"))
assert spec is not None and spec.loader is not None
store_parts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(store_parts)


def store_tgz(path: Path, members: dict[str, str]) -> Path:
    """A device run's store tarball as validate.sh writes it (`tar czf ... -C $HOME store-tune`)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_each_part_holds_only_what_is_new_or_changed_and_join_gives_the_latest_store(tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    first = store_tgz(tmp_path / "a.tgz", {
        "store-tune/cells/k1/s1/summary.parquet": "van r0",
        "store-tune/sessions/s1.json": "started",
        "store-tune/leases/k2.json": "a dead driver's lease",
        "store-tune/cells/k2/.tmp-99.parquet": "half a file",
    })  # fmt: skip
    assert store_parts.pack(parts, first) == parts / "part-01.tgz"
    assert set(store_parts.files(parts / "part-01.tgz")) == {
        "store-tune/cells/k1/s1/summary.parquet", "store-tune/sessions/s1.json"}  # fmt: skip
    assert store_parts.pack(parts, first) is None  # the same store again adds nothing
    second = store_tgz(tmp_path / "b.tgz", {
        "store-tune/cells/k1/s1/summary.parquet": "van r0",
        "store-tune/sessions/s1.json": "ended",
        "store-tune/cells/k3/s2/summary.parquet": "suffix r0",
    })  # fmt: skip
    assert store_parts.pack(parts, second) == parts / "part-02.tgz"
    assert set(store_parts.files(parts / "part-02.tgz")) == {
        "store-tune/sessions/s1.json", "store-tune/cells/k3/s2/summary.parquet"}  # fmt: skip
    store_parts.join(parts, tmp_path / "joined.tgz")
    joined = store_parts.files(tmp_path / "joined.tgz")
    assert joined == {name: data for name, data in store_parts.files(second).items()}
    assert joined["store-tune/sessions/s1.json"] == b"ended"  # the later part wins


def test_parts_are_taken_in_number_order_not_name_order(tmp_path: Path) -> None:
    for n in (2, 10, 1):
        store_tgz(tmp_path / f"part-{n:02d}.tgz" if n < 10 else tmp_path / f"part-{n}.tgz", {"f": str(n)})
    assert [p.name for p in store_parts.parts(tmp_path)] == ["part-01.tgz", "part-02.tgz", "part-10.tgz"]
    assert store_parts.joined(tmp_path) == {"f": b"10"}


def test_join_without_parts_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no part-NN\.tgz under"):
        store_parts.join(tmp_path, tmp_path / "out.tgz")

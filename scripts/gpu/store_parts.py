"""A store that outlives the lent machines, kept in git as parts: each part holds only what a device
run added to the store (or changed in it), so a long run (issue 44's tune: ~1.8 GPU-hours over several
30-minute sessions) is committed once per file, not once per session.

    python scripts/gpu/store_parts.py pack PARTS_DIR STORE_TGZ  # a run's store-<part>.tgz -> part-NN.tgz
    python scripts/gpu/store_parts.py join PARTS_DIR STORE_TGZ  # the parts, in order -> store-<part>.tgz

`join` writes what validate.sh resumes from (`.gpu/store-<part>.tgz` in the carried tree). Members are
compared by content: a file a later run rewrote goes into the new part and wins on join. Leases and
`.tmp-*` files (store/atomic.py) are never packed: a resume must take none over or read half a file.
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
import tarfile
from pathlib import Path

PART = re.compile(r"part-(\d+)\.tgz$")


def kept(name: str) -> bool:
    """A member a store needs: not a lease, lock or temp file (store/lease.py, store/atomic.py)."""
    parts = Path(name).parts
    return "leases" not in parts and not Path(name).name.startswith((".tmp-", ".lock-"))


def files(tgz: Path) -> dict[str, bytes]:
    """Regular files of a tarball by member name (`./` stripped), those a store needs."""
    out: dict[str, bytes] = {}
    with tarfile.open(tgz) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("./")
            if member.isfile() and kept(name):
                handle = tar.extractfile(member)
                assert handle is not None
                out[name] = handle.read()
    return out


def parts(parts_dir: Path) -> list[Path]:
    """The parts in order (part-01.tgz, part-02.tgz, ...)."""
    found = [p for p in parts_dir.glob("part-*.tgz") if PART.search(p.name)]
    return sorted(found, key=lambda p: int(PART.search(p.name).group(1)))  # type: ignore[union-attr]


def joined(parts_dir: Path) -> dict[str, bytes]:
    """Every part's files, later parts over earlier ones."""
    out: dict[str, bytes] = {}
    for part in parts(parts_dir):
        out.update(files(part))
    return out


def write(tgz: Path, members: dict[str, bytes]) -> None:
    tgz.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz, "w:gz") as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            info.mtime = 0  # a part's bytes depend on its files only
            tar.addfile(info, io.BytesIO(members[name]))


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack(parts_dir: Path, store_tgz: Path) -> Path | None:
    """The next part: the files of `store_tgz` that the parts so far do not hold as they are; None where
    there is nothing new."""
    have = {name: digest(data) for name, data in joined(parts_dir).items()}
    new = {name: data for name, data in files(store_tgz).items() if have.get(name) != digest(data)}
    if not new:
        return None
    done = parts(parts_dir)
    number = 1 + (int(PART.search(done[-1].name).group(1)) if done else 0)  # type: ignore[union-attr]
    target = parts_dir / f"part-{number:02d}.tgz"
    write(target, new)
    return target


def join(parts_dir: Path, store_tgz: Path) -> int:
    members = joined(parts_dir)
    if not members:
        raise SystemExit(f"store_parts: no part-NN.tgz under {parts_dir}: nothing to join")
    write(store_tgz, members)
    return len(members)


def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] not in ("pack", "join"):
        raise SystemExit(__doc__)
    command, parts_dir, store_tgz = argv[0], Path(argv[1]), Path(argv[2])
    if command == "pack":
        if not store_tgz.is_file():
            raise SystemExit(f"store_parts: {store_tgz} is not a file: pass a device run's store-<part>.tgz")
        target = pack(parts_dir, store_tgz)
        print(
            f"store_parts: {target or 'nothing new'}"
            + (f" ({target.stat().st_size:,} bytes)" if target else "")
        )
    else:
        print(f"store_parts: {join(parts_dir, store_tgz)} files -> {store_tgz}")


if __name__ == "__main__":
    main(sys.argv[1:])

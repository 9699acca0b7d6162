"""Leases: which driver is measuring a cell now, so two drivers on one store never measure it at once.

`<root>/leases/<cell_key>.json` holds the owner (session id), host, pid, a
random token and an expiry. A driver takes the lease before it starts an
engine on the cell, renews it while the cell's group runs, and removes it
when the group settles. A lease past its expiry (its driver was killed) is
taken over, and the new lease names the one it replaced; so is a lease whose
driver ran on this host and is gone (a driver killed and run again).

How "created only if absent" is made:
- a local folder: the lease is written to a temp file, then hard-linked onto
  its name (link fails if the name exists), so a reader sees no lease or a
  whole one; a stale one is taken over under a lock file beside it
  (`.lock-<cell_key>`, flock): the driver that finds the stale token still
  there removes it and creates its own;
- an object store (store/fs.py): pyarrow's filesystem has no conditional PUT
  (S3's If-None-Match), and boto3 cannot share the harness's venv (botocore
  pins python-dateutil < 3), so it is best effort: PUT only if absent, wait
  READ_BACK_S, read it back; S3 is strongly consistent and the last PUT wins,
  so of two drivers whose PUTs both land within READ_BACK_S exactly one reads
  its own token back. Two PUTs further apart than that see each other's lease.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import socket
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import psutil

from store.atomic import finished, write_atomic
from store.fs import StorePath, StoreRoot

LEASES = "leases"
# Object stores: how long a driver waits before it reads back the lease it PUT (see above).
READ_BACK_S = 0.5


# What each field of a lease file must hold (None only where the field may be None).
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "cell_key": (str,),
    "owner": (str,),
    "host": (str,),
    "pid": (int,),
    "token": (str,),
    "expires_at": (int, float),
    "took_over": (str, type(None)),
}


@dataclass(frozen=True)
class Lease:
    cell_key: str
    owner: str  # the driver's session id
    host: str
    pid: int
    token: str
    expires_at: float  # epoch s
    took_over: str | None = None  # the holder of the stale lease this one replaced

    @classmethod
    def new(cls, cell_key: str, owner: str, ttl_s: float) -> Lease:
        host, token = socket.gethostname(), secrets.token_hex(8)
        return cls(cell_key, owner, host, os.getpid(), token, time.time() + ttl_s)

    def expired(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) > self.expires_at

    def driver_gone(self) -> bool:
        """Its driver ran on this host and its process is gone (killed): no need to wait for the expiry."""
        return self.host == socket.gethostname() and not psutil.pid_exists(self.pid)

    def stale(self, now: float | None = None) -> str | None:
        """Why no driver holds this lease any more, as `run` decides it (expired, or its driver gone
        from this host), or None while its driver may be measuring."""
        now = now if now is not None else time.time()
        if self.driver_gone():
            return f"its driver (pid {self.pid}) is gone from this host"
        if self.expired(now):
            return f"expired {now - self.expires_at:,.0f} s ago"
        return None

    def holder(self) -> str:
        return f"{self.owner} on {self.host} (pid {self.pid})"

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Lease:
        """The lease `data` holds; ValueError when it is not one (not JSON, a field missing, a field of
        another type: `"expires_at": "soon"` would fail every comparison a reader makes)."""
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise ValueError(f"a JSON {type(raw).__name__}, not an object")
        for name, kinds in FIELD_TYPES.items():
            value = raw.get(name)
            if name in raw and (not isinstance(value, kinds) or isinstance(value, bool)):
                raise ValueError(f"{name} is a {type(value).__name__}")
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})


class UnreadableLease(ValueError):
    """A lease file that cannot be read as a lease; `why` says what is wrong with it."""

    def __init__(self, path: StoreRoot, why: str) -> None:
        super().__init__(f"{path}: unreadable lease ({why})")
        self.why = why


def lease_path(root: StoreRoot, cell_key: str) -> StoreRoot:
    return root / LEASES / f"{cell_key}.json"


def read_lease(path: StoreRoot) -> Lease | None:
    """The lease at `path`; None when there is none. An unreadable one raises UnreadableLease."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return Lease.from_bytes(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise UnreadableLease(path, str(exc)) from exc


def all_leases(root: StoreRoot) -> list[Lease]:
    """Every readable lease in the store (expired ones too)."""
    found = []
    folder = root / LEASES
    paths = folder.glob("*.json") if isinstance(folder, StorePath) or folder.is_dir() else []
    for path in sorted(finished(paths)):
        with contextlib.suppress(ValueError, OSError):
            if (lease := read_lease(path)) is not None:
                found.append(lease)
    return found


def create(path: StoreRoot, lease: Lease, read_back: bool = True) -> bool:
    """Write the lease only if none is there; True when this driver holds it.

    Object stores: `read_back=False` skips the wait and the read-back, for a caller
    that writes several leases, waits READ_BACK_S once and then `confirm`s each.
    """
    if isinstance(path, StorePath):
        if path.exists():
            return False
        path.write_bytes(lease.to_bytes())
        if not read_back:
            return True
        time.sleep(READ_BACK_S)
        return confirm(path, lease)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{lease.token}-{path.name}")
    tmp.write_bytes(lease.to_bytes())
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def confirm(path: StoreRoot, lease: Lease) -> bool:
    """Whether the lease at `path` is still `lease` (on an object store: the last PUT was ours)."""
    with contextlib.suppress(ValueError, OSError):
        current = read_lease(path)
        return current is not None and current.token == lease.token
    return False


def take_over(path: StoreRoot, stale: Lease, lease: Lease, read_back: bool = True) -> bool:
    """Replace the expired lease `stale` with `lease`; False when another driver got there first."""
    if isinstance(path, StorePath):
        with contextlib.suppress(ValueError):
            current = read_lease(path)
            if current is not None and current.token != stale.token:
                return False
        path.unlink(missing_ok=True)
        return create(path, lease, read_back)
    assert isinstance(path, Path)
    # Take-overs of one lease are serialised by a lock file beside it (kept: unlinking a lock
    # file others wait on would let two hold it). Renaming the stale lease away without one
    # let two drivers win: while one put back a fresh lease it had moved by mistake, the name
    # was absent and a third created its own (CI, 2026-12-01).
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".lock-{path.stem}"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            current = read_lease(path)
        except ValueError:
            current = None  # unreadable: removed as stale
        else:
            if current is None or current.token != stale.token:
                return False  # released, or another driver took it over first
        path.unlink(missing_ok=True)
        # A driver creating anew (the name absent) may still win here: create is atomic, one holds it.
        return create(path, lease)


def remove_stale(path: StoreRoot, stale: Lease) -> bool:
    """Remove the stale lease `stale` if it is still the one there (no driver took it over meanwhile);
    True when removed. Local stores under the take-over lock; object stores best effort."""
    if isinstance(path, StorePath):
        with contextlib.suppress(ValueError):
            current = read_lease(path)
            if current is None or current.token != stale.token:
                return False
            path.unlink(missing_ok=True)
            return True
        return False
    assert isinstance(path, Path)
    with open(path.with_name(f".lock-{path.stem}"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            current = read_lease(path)
        except ValueError:
            return False
        if current is None or current.token != stale.token:
            return False
        path.unlink(missing_ok=True)
        return True


def remove_unreadable(path: StoreRoot, older_than_s: float) -> bool:
    """Remove the lease file at `path` if it still cannot be read as a lease and was last written more
    than `older_than_s` ago (a live driver rewrites its lease every third of run.lease_s); True when
    removed. Local stores under the take-over lock (a take-over replaces it only under it); object
    stores best effort."""

    def still_stale() -> bool:
        try:
            read_lease(path)
            return False  # absent, or readable again: a driver's
        except ValueError:
            pass
        try:
            return time.time() - path.stat().st_mtime > older_than_s
        except OSError:
            return False

    if isinstance(path, StorePath):
        if not still_stale():
            return False
        path.unlink(missing_ok=True)
        return True
    assert isinstance(path, Path)
    with open(path.with_name(f".lock-{path.stem}"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not still_stale():
            return False
        path.unlink(missing_ok=True)
        return True


def renew(path: StoreRoot, lease: Lease, ttl_s: float) -> Lease | None:
    """Push the expiry on; None when the lease is no longer this driver's (taken over or removed)."""
    try:
        current = read_lease(path)
    except ValueError:
        return None
    if current is None or current.token != lease.token:
        return None
    renewed = replace(lease, expires_at=time.time() + ttl_s)
    write_atomic(path, lambda tmp: tmp.write_bytes(renewed.to_bytes()))
    return renewed


def release(path: StoreRoot, lease: Lease) -> None:
    """Remove the lease if it is still this driver's."""
    with contextlib.suppress(ValueError, OSError):
        current = read_lease(path)
        if current is not None and current.token == lease.token:
            path.unlink(missing_ok=True)

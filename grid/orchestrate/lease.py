"""The driver's leases: several drivers, one store; a cell is measured by one of them at a time.

Before an engine group starts, the driver takes a lease on each of its cells
(store/lease.py); cells leased by another driver are left out of the group
(skipped: that driver measures them), and so are cells another driver has
measured since this run read the store. Drift anchors are the session's
own and are never leased. A thread renews the held leases
every third of run.lease_s; a group's leases are removed when it settles.
A killed driver's leases expire after run.lease_s and the next driver takes
them over, saying so; on the host it ran on, at once (its pid is gone). A lease
file that cannot be read (garbled, cut short) names no driver: it is treated as
expiring run.lease_s after it was last written, then taken over, saying so. No run takes over a
lease on a cell already measured (done or INVALID): the next run removes a dead driver's, or a
garbled one as old, instead, saying so (clear_stale_on_done).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator

from grid.orchestrate.ledger import DONE, INVALID
from store.fs import StorePath, StoreRoot
from store.layout import MANIFEST, StoreLayout
from store.lease import (
    LEASES,
    READ_BACK_S,
    Lease,
    UnreadableLease,
    all_leases,
    confirm,
    create,
    lease_path,
    read_lease,
    release,
    remove_stale,
    remove_unreadable,
    renew,
    take_over,
)
from vocab.groups import EngineGroup


def measured_since(root: StoreRoot, cell_key: str, since_s: float, owner: str) -> str | None:
    """The session of another driver that stored an ok attempt of the cell since `since_s`, if any."""
    for manifest in StoreLayout(root).cell_dir(cell_key).glob(f"*/{MANIFEST}"):
        try:
            if manifest.stat().st_mtime < since_s:
                continue
            data = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if data.get("status") == "ok" and data.get("session_id") != owner:
            return str(data.get("session_id"))
    return None


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """A lease file that names no driver: its cell, why, and how long ago it was last written."""

    cell_key: str
    why: str
    age_s: float

    def what(self) -> str:
        return f"unreadable lease ({self.why}), written {self.age_s:,.0f} s ago"

    def words(self, ttl_s: float, measured: bool = False) -> str:
        """When it goes, and how: a run takes it over (its cell is still to measure) or, its cell
        `measured` (done or INVALID: no run takes that over), removes it (clear_stale_on_done)."""
        if self.age_s > ttl_s:
            when = f"stale: the next run {'removes it' if measured else 'takes it over'}"
        else:
            after = f"{ttl_s - self.age_s:,.0f} s from now (run.lease_s after it was written)"
            when = f"removed by a run started {after}" if measured else f"taken over {after}"
        return f"{self.what()}; {when}"


def unreadable(path: StoreRoot, now: float | None = None) -> Unreadable | None:
    """The lease file at `path` when it cannot be read as a lease, else None (absent, or readable)."""
    try:
        read_lease(path)
        return None
    except UnreadableLease as exc:
        why = exc.why
    try:
        written_s = path.stat().st_mtime
    except OSError:
        return None  # removed meanwhile
    age_s = (now if now is not None else time.time()) - written_s
    return Unreadable(path.name.removesuffix(".json"), why, age_s)


def unreadable_leases(root: StoreRoot) -> list[Unreadable]:
    """Every lease file of the store that cannot be read (status names them; run takes them over)."""
    folder = root / LEASES
    if not isinstance(folder, StorePath) and not folder.is_dir():
        return []
    found = [unreadable(path) for path in folder.glob("*.json")]
    return sorted((u for u in found if u is not None), key=lambda u: u.cell_key)


# A measured cell, as clear_stale_on_done names it (by the ledger's state: DONE or INVALID).
MEASURED_WORDS = {DONE: "done cell {key}", INVALID: "cell {key}, measured INVALID"}


def clear_stale_on_done(
    root: StoreRoot, state: Callable[[str], str | None], say: Callable[[str], None], ttl_s: float
) -> int:
    """Remove the leases no driver holds on cells already measured (`state(cell_key)`, the ledger's:
    done or INVALID): no run takes those over, so they would stay "stale" for ever. A dead driver's
    (expired, or its pid gone from this host), and a lease file that cannot be read and was not
    rewritten for `ttl_s` (run.lease_s: as stale as CellLeases would take it over). Each one removed
    is said, with the cell's state; the count is returned."""
    removed = 0
    for lease in all_leases(root):
        if (why := lease.stale()) is None or (on := measured_cell(state, lease.cell_key)) is None:
            continue
        with contextlib.suppress(OSError):
            if remove_stale(lease_path(root, lease.cell_key), lease):
                removed += 1
                say(f"lease: removed {lease.holder()}'s lease on {on} ({why})")
    for bad in unreadable_leases(root):
        if bad.age_s <= ttl_s or (on := measured_cell(state, bad.cell_key)) is None:
            continue
        with contextlib.suppress(OSError):
            if remove_unreadable(lease_path(root, bad.cell_key), ttl_s):
                removed += 1
                say(f"lease: removed an {bad.what()}, on {on} (no driver rewrote it for run.lease_s)")
    return removed


def measured_cell(state: Callable[[str], str | None], key: str) -> str | None:
    """'done cell <key>' or 'cell <key>, measured INVALID'; None for a cell not measured."""
    words = MEASURED_WORDS.get(state(key) or "")
    return None if words is None else words.format(key=key)


class CellLeases:
    """The leases one driver holds, and the cells it left to other drivers."""

    def __init__(
        self, root: StoreRoot, owner: str, ttl_s: float, say: Callable[[str], None], since_s: float
    ) -> None:
        self.root, self.owner, self.ttl_s, self.say = root, owner, ttl_s, say
        # Object stores keep LastModified to the second: a manifest of the same second counts.
        self.since_s = since_s - 1.0
        self.held: dict[str, Lease] = {}
        self.skipped: dict[str, str] = {}  # cell key -> who has it
        self.lock = threading.Lock()

    def take(self, group: EngineGroup) -> EngineGroup | None:
        """The group with only the cells this driver now holds; None when it holds none."""
        remote = isinstance(self.root, StorePath)
        taken = []
        for cell in group.cells:
            if cell.anchor is not None:  # each session measures its own drift anchors: never shared
                taken.append((cell, None))
                continue
            # Object stores: every lease PUT first, then one wait and a read-back of each (store/lease.py).
            if (lease := self._take(cell.key, cell.label, read_back=not remote)) is not None:
                taken.append((cell, lease))
        if remote and any(lease is not None for _, lease in taken):
            time.sleep(READ_BACK_S)
            for cell, lease in list(taken):
                if lease is not None and not confirm(lease_path(self.root, cell.key), lease):
                    taken.remove((cell, lease))
                    self.skipped[cell.key] = "another driver's lease landed last"
        cells = []
        for cell, lease in taken:
            if lease is None:
                cells.append(cell)
                continue
            with self.lock:
                self.held[cell.key] = lease
            if (other := measured_since(self.root, cell.key, self.since_s, self.owner)) is not None:
                self._release(cell.key)
                self.skipped[cell.key] = f"measured by session {other} since this run started"
                continue
            cells.append(cell)
        return dataclasses.replace(group, cells=tuple(cells)) if cells else None

    def _take(self, key: str, label: str, read_back: bool = True) -> Lease | None:
        path = lease_path(self.root, key)
        for _ in range(3):
            lease = Lease.new(key, self.owner, self.ttl_s)
            if create(path, lease, read_back):
                return lease
            try:
                current = read_lease(path)
            except ValueError:
                if (bad := unreadable(path)) is None:
                    continue  # rewritten or removed meanwhile: try again
                if bad.age_s <= self.ttl_s:
                    self.skipped[key] = bad.words(self.ttl_s)
                    return None
                # Names no driver and not rewritten for run.lease_s: as stale as an expired lease.
                placeholder = Lease(key, "unreadable", "?", 0, "", time.time() - bad.age_s + self.ttl_s)
                lease = dataclasses.replace(lease, took_over="an unreadable lease")
                if take_over(path, placeholder, lease, read_back):
                    self.say(f"lease: took over {label} from an {bad.what()}")
                    return lease
                continue
            if current is None:
                continue  # released meanwhile: try again
            gone = current.driver_gone()
            if not current.expired() and not gone:
                self.skipped[key] = f"leased by {current.holder()}"
                return None
            lease = dataclasses.replace(lease, took_over=current.holder())
            if take_over(path, current, lease, read_back):
                ago = time.time() - current.expires_at
                why = "its driver is gone from this host" if gone else f"expired {ago:,.0f} s ago"
                self.say(f"lease: took over {label} from {current.holder()} ({why})")
                return lease
        self.skipped[key] = "lease contended"
        return None

    def _release(self, key: str) -> None:
        with self.lock:
            lease = self.held.pop(key, None)
        if lease is not None:
            release(lease_path(self.root, key), lease)

    def release(self, group: EngineGroup) -> None:
        for cell in group.cells:
            self._release(cell.key)

    def release_all(self) -> None:
        with self.lock:
            keys = list(self.held)
        for key in keys:
            self._release(key)

    def renew_all(self) -> None:
        with self.lock:
            held = dict(self.held)
        for key, lease in held.items():
            try:
                renewed = renew(lease_path(self.root, key), lease, self.ttl_s)
            except OSError as exc:
                self.say(f"lease: could not renew {key} ({exc}); retrying")
                continue
            with self.lock:
                if key not in self.held:
                    continue  # released meanwhile
                if renewed is None:
                    self.held.pop(key)
                    self.say(f"lease: lost the lease on cell {key} (taken over or removed)")
                else:
                    self.held[key] = renewed

    @contextlib.contextmanager
    def renewing(self) -> Iterator[CellLeases]:
        """Renew the held leases every third of the lease time; release them all at the end."""
        done = threading.Event()

        def loop() -> None:
            while not done.wait(self.ttl_s / 3):
                self.renew_all()

        thread = threading.Thread(target=loop, name="lease-renewal", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            done.set()
            thread.join(timeout=10)
            self.release_all()

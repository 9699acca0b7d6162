"""Issue 19: leases on cells (store/lease.py, grid/orchestrate/lease.py), on a local folder and on S3
(moto)."""

import dataclasses
import json
import subprocess
import sys
import threading
import time

from rich.console import Console

from grid.cli.status import status
from grid.orchestrate.lease import CellLeases
from store.fs import StorePath
from store.layout import StoreLayout
from store.lease import Lease, all_leases, create, lease_path, read_lease, release, renew, take_over
from store.writer import write_ok_attempt
from tests.s3server import options_override
from tests.unit.grid.orchestrate.test_ledger import smoke_cells
from tests.unit.store.test_writer_read import records, tags
from vocab.groups import EngineGroup


def group_of(*cells):
    return EngineGroup(cells[0].engine_spec, tuple(cells))


def race(n, work):
    """Run `work(i)` in n threads released at once; their results."""
    barrier, results = threading.Barrier(n), [None] * n

    def one(i):
        barrier.wait()
        results[i] = work(i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_a_lease_is_created_only_if_absent_and_released_only_by_its_owner(store_root):
    path = lease_path(store_root, "c1")
    mine, theirs = Lease.new("c1", "s1", 60), Lease.new("c1", "s2", 60)
    assert create(path, mine)
    assert not create(path, theirs)
    assert read_lease(path).token == mine.token
    release(path, theirs)
    assert read_lease(path).token == mine.token
    renewed = renew(path, mine, 600)
    assert renewed.expires_at > mine.expires_at + 500
    release(path, renewed)
    assert read_lease(path) is None


def test_of_drivers_racing_for_one_lease_exactly_one_gets_it(store_root):
    path = lease_path(store_root, "c1")
    won = race(4, lambda i: create(path, Lease.new("c1", f"s{i}", 60)))
    assert won.count(True) == 1


def test_of_drivers_racing_to_take_over_a_stale_lease_exactly_one_gets_it(store_root):
    path = lease_path(store_root, "c1")
    stale = dataclasses.replace(Lease.new("c1", "dead", 60), expires_at=time.time() - 5)
    assert create(path, stale)
    won = race(4, lambda i: take_over(path, stale, Lease.new("c1", f"s{i}", 60)))
    assert won.count(True) == 1
    assert read_lease(path).owner != "dead"


def test_a_driver_skips_cells_another_holds_and_takes_over_stale_ones(store_root):
    a, b, c, _ = smoke_cells()
    live = Lease.new(a.key, "other-session", 60)
    stale = dataclasses.replace(Lease.new(b.key, "dead-session", 60), expires_at=time.time() - 30)
    assert create(lease_path(store_root, a.key), live)
    assert create(lease_path(store_root, b.key), stale)
    said = []
    leases = CellLeases(store_root, "me", 60, said.append, time.time())
    held = leases.take(group_of(a, b, c))
    assert [cell.key for cell in held.cells] == [b.key, c.key]
    assert leases.skipped == {a.key: f"leased by {live.holder()}"}
    assert len(said) == 1 and said[0].startswith(f"lease: took over {b.label} from dead-session on ")
    taken = read_lease(lease_path(store_root, b.key))
    assert taken.owner == "me" and taken.took_over == stale.holder()
    assert leases.take(group_of(a)) is None
    leases.release(held)
    assert {lease.cell_key for lease in all_leases(store_root)} == {a.key}


def test_a_cell_measured_by_another_driver_since_the_run_started_is_skipped(store_root):
    a, b, _, _ = smoke_cells()
    leases = CellLeases(store_root, "me", 60, print, time.time())
    write_ok_attempt(StoreLayout(store_root), tags(a.key, "other-a1"), records(1), {"valid": True})
    held = leases.take(group_of(a, b))
    assert [cell.key for cell in held.cells] == [b.key]
    assert "measured by session s1 since this run started" in leases.skipped[a.key]
    assert read_lease(lease_path(store_root, a.key)) is None  # its lease was given back


def test_renewal_keeps_leases_alive_and_notices_a_lost_one(store_root):
    a, b, _, _ = smoke_cells()
    said = []
    leases = CellLeases(store_root, "me", 60, said.append, time.time())
    leases.take(group_of(a, b))
    before = read_lease(lease_path(store_root, a.key)).expires_at
    lease_path(store_root, b.key).unlink()  # someone removed it
    time.sleep(0.01)
    leases.renew_all()
    assert read_lease(lease_path(store_root, a.key)).expires_at > before
    assert said == [f"lease: lost the lease on cell {b.key} (taken over or removed)"]
    with leases.renewing():
        pass
    assert all_leases(store_root) == []  # released at the end


def test_status_shows_leased_cells_with_their_owner(store_root):
    a, b, _, _ = smoke_cells()
    create(lease_path(store_root, a.key), Lease.new(a.key, "sess-A", 60))
    stale = dataclasses.replace(Lease.new(b.key, "sess-B", 60), expires_at=time.time() - 100)
    create(lease_path(store_root, b.key), stale)
    overrides = ["experiment=smoke", f"paths.store={store_root}"]
    if isinstance(store_root, StorePath):
        overrides += options_override(dict(store_root.store.options)["endpoint_override"])
    console = Console(record=True, width=400)
    assert status(overrides, console) == 0
    out = console.export_text()
    assert f"leased: {a.label}: being measured by sess-A on " in out
    assert f"stale lease {b.label}: sess-B on " in out and "the next run takes it over" in out


def test_a_lease_of_a_driver_gone_from_this_host_is_taken_over_at_once(store_root):
    a, _, _, _ = smoke_cells()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    killed = dataclasses.replace(Lease.new(a.key, "killed-session", 600), pid=gone.pid)
    assert not killed.expired() and killed.driver_gone()
    assert create(lease_path(store_root, a.key), killed)
    said = []
    held = CellLeases(store_root, "me", 60, said.append, time.time()).take(group_of(a))
    assert [cell.key for cell in held.cells] == [a.key]
    assert said[0].endswith("(its driver is gone from this host)")


def test_drivers_racing_for_one_group_hold_each_cell_at_most_once(store_root):
    cells = smoke_cells()
    drivers = [CellLeases(store_root, f"s{i}", 60, print, time.time()) for i in range(3)]
    held = race(3, lambda i: drivers[i].take(group_of(*cells)))
    keys = [cell.key for group in held if group is not None for cell in group.cells]
    assert sorted(keys) == sorted({c.key for c in cells})  # each cell held by exactly one driver


def test_drift_anchors_are_never_leased_each_session_measures_its_own(store_root):
    a, b, _, _ = smoke_cells()
    anchor = dataclasses.replace(a, anchor="start")
    assert create(lease_path(store_root, anchor.key), Lease.new(anchor.key, "other-session", 60))
    write_ok_attempt(StoreLayout(store_root), tags(anchor.key, "other-a1"), records(1), {"valid": True})
    leases = CellLeases(store_root, "me", 60, print, time.time() - 5)
    held = leases.take(group_of(anchor, b))
    assert [cell.key for cell in held.cells] == [anchor.key, b.key]
    assert read_lease(lease_path(store_root, anchor.key)).owner == "other-session"  # untouched
    assert set(leases.held) == {b.key}


def test_a_garbled_lease_is_left_until_lease_s_then_taken_over_with_a_line(tmp_path):
    """Issue 38: a garbled leases/<cell>.json blocked its cell for ever ('unreadable lease')."""
    import os

    from grid.orchestrate.lease import unreadable_leases

    store_root = tmp_path / "store"  # a local folder: the test dates a file back (object stores set it)
    a, b = smoke_cells()[:2]
    for cell in (a, b):
        path = lease_path(store_root, cell.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"cell_key": "')  # cut short
    old = time.time() - 120
    os.utime(lease_path(store_root, b.key), (old, old))
    said = []
    leases = CellLeases(store_root, "me", 60, said.append, time.time())
    taken = leases.take(group_of(a, b))
    assert taken is not None and [c.key for c in taken.cells] == [b.key]  # b's garbled lease is stale
    assert read_lease(lease_path(store_root, b.key)).owner == "me"
    assert len(said) == 1 and said[0].startswith(f"lease: took over {b.label} from an unreadable lease ("), (
        said
    )
    assert "unreadable lease" in leases.skipped[a.key] and "taken over" in leases.skipped[a.key]
    # status names the one still unreadable, and when a run takes it over.
    assert [u.cell_key for u in unreadable_leases(store_root)] == [a.key]
    assert unreadable_leases(store_root)[0].words(60).endswith("(run.lease_s after it was written)")


def test_status_names_a_garbled_lease(tmp_path, capsys):
    import json as json_module

    store_root = tmp_path / "store"
    (a,) = smoke_cells()[:1]
    path = lease_path(store_root, a.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    text = io_status(["experiment=smoke", f"paths.store={store_root}"])
    assert f"unreadable lease {a.label}: unreadable lease (" in text and "taken over " in text, text
    status(["experiment=smoke", f"paths.store={store_root}", "format=json"])
    record = json_module.loads(capsys.readouterr().out)
    assert [u["cell_key"] for u in record["unreadable_leases"]] == [a.key]


def io_status(overrides):
    import io

    out = io.StringIO()
    assert status(overrides, Console(file=out, width=300)) == 0
    return out.getvalue()


def test_a_lease_whose_fields_have_other_types_is_unreadable_not_a_traceback(tmp_path):
    """A JSON object with `"expires_at": "soon"` read as a lease made status and run compare a float
    with a str (TypeError, a traceback); it is an unreadable lease like a garbled one."""
    import pytest

    store_root = tmp_path / "store"
    a, b = smoke_cells()[:2]
    typed = {"cell_key": a.key, "owner": "x", "host": "h", "pid": "abc", "token": "t", "expires_at": "soon"}
    for cell, text in ((a, json.dumps(typed)), (b, "[1, 2]")):
        path = lease_path(store_root, cell.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        with pytest.raises(ValueError, match="unreadable lease"):
            read_lease(path)
    assert all_leases(store_root) == []
    text = io_status(["experiment=smoke", f"paths.store={store_root}"])
    assert f"unreadable lease {a.label}: unreadable lease (" in text, text
    assert f"unreadable lease {b.label}: unreadable lease (" in text, text
    leases = CellLeases(store_root, "me", 60, [].append, time.time())
    assert leases.take(group_of(a, b)) is None  # both within run.lease_s of being written: left
    assert "unreadable lease" in leases.skipped[a.key], leases.skipped

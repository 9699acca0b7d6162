"""Leases on cells already measured (issue 45 item 8): no run takes them over, so the next run removes
them and says what the cell is; a garbled one too, once no driver has rewritten it for run.lease_s,
and `status` says so instead of "the next run takes it over"."""

from __future__ import annotations

import dataclasses
import os
import time

from rich.console import Console

from grid.cli.status import status
from grid.orchestrate.lease import clear_stale_on_done, unreadable_leases
from grid.orchestrate.ledger import DONE, INVALID, build_ledger
from store.layout import StoreLayout
from store.lease import Lease, all_leases, create, lease_path
from store.writer import write_ok_attempt
from tests.unit.grid.orchestrate.test_ledger import smoke_cells
from tests.unit.grid.orchestrate.test_signals_and_stale import dead_pid
from tests.unit.store.test_writer_read import records, tags

TTL_S = 60


def garble(root, key: str, age_s: float) -> None:
    path = lease_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cell_key": "')  # cut short
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_a_dead_drivers_lease_on_an_invalid_cell_is_said_to_be_on_an_invalid_cell(tmp_path):
    a = smoke_cells()[0]
    killed = dataclasses.replace(Lease.new(a.key, "killed", 600), pid=dead_pid())
    assert create(lease_path(tmp_path, a.key), killed)
    said = []
    assert clear_stale_on_done(tmp_path, {a.key: INVALID}.get, said.append, TTL_S) == 1
    assert not all_leases(tmp_path)
    assert said == [
        f"lease: removed {killed.holder()}'s lease on cell {a.key}, measured INVALID "
        f"(its driver (pid {killed.pid}) is gone from this host)"
    ]


def test_a_garbled_lease_on_a_measured_cell_is_removed_once_lease_s_old_and_no_other(tmp_path):
    a, b, c, d = smoke_cells()[:4]
    garble(tmp_path, a.key, 2 * TTL_S)  # measured (done), stale: removed
    garble(tmp_path, b.key, 2 * TTL_S)  # measured INVALID, stale: removed
    garble(tmp_path, c.key, TTL_S / 2)  # measured, but a driver may still be rewriting it: kept
    garble(tmp_path, d.key, 2 * TTL_S)  # not measured: a run takes it over (CellLeases), kept here
    said = []
    state = {a.key: DONE, b.key: INVALID, c.key: DONE}.get
    assert clear_stale_on_done(tmp_path, state, said.append, TTL_S) == 2
    assert sorted(u.cell_key for u in unreadable_leases(tmp_path)) == sorted([c.key, d.key])
    assert len(said) == 2 and all(line.startswith("lease: removed an unreadable lease (") for line in said)
    assert any(f", on done cell {a.key} (no driver rewrote it for run.lease_s)" in line for line in said)
    assert any(f", on cell {b.key}, measured INVALID (no driver rewrote" in line for line in said)


def test_status_says_the_next_run_removes_a_garbled_lease_on_a_measured_cell(tmp_path):
    a, b = smoke_cells()[:2]
    store = tmp_path / "store"
    summary = {**a.as_record(), "valid": True, "output_tok_per_s": 1.0}
    write_ok_attempt(StoreLayout(store), tags(a.key, "s1-a"), records(1), summary)
    assert build_ledger(store).status(a.key) == DONE
    garble(store, a.key, 2 * TTL_S)
    garble(store, b.key, 2 * TTL_S)
    console = Console(record=True, width=400)
    status(["experiment=smoke", f"paths.store={store}", f"run.lease_s={TTL_S}"], console)
    out = console.export_text()
    assert f"unreadable lease {a.label}: " in out
    line_a = next(line for line in out.splitlines() if line.startswith(f"unreadable lease {a.label}:"))
    line_b = next(line for line in out.splitlines() if line.startswith(f"unreadable lease {b.label}:"))
    assert line_a.endswith("stale: the next run removes it"), line_a
    assert line_b.endswith("stale: the next run takes it over"), line_b
    # And it does: the next run's clearing (as run calls it) removes it, a's only.
    ledger = build_ledger(store)
    clear_stale_on_done(store, ledger.status, lambda line: None, TTL_S)
    assert [u.cell_key for u in unreadable_leases(store)] == [b.key]

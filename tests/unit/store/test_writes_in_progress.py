"""Readers skip another driver's writes in progress (the `.tmp-*` files store/atomic.py renames away).

Seen in CI (tests/scheduling/test_two_drivers.py, a rare exit 1 of one driver):
`connect` listed the sessions folder while the other driver was writing its
session file, and DuckDB was handed the temp file's name, gone by the time it
read: "No files found that match the pattern .../sessions/.tmp-c9dwzrm6.json".
"""

from __future__ import annotations

from store.atomic import TMP_PREFIX, finished, write_json
from store.layout import StoreLayout
from store.lease import Lease, all_leases, create, lease_path
from store.read import connect


def test_connect_reads_whole_session_and_verdict_files_and_skips_temp_ones(tmp_path):
    root = tmp_path / "store"
    layout = StoreLayout(root)
    write_json(layout.sessions_dir() / "s1.json", {"session_id": "s1", "host": "node-a"})
    # Another driver's writes caught half way: half a JSON object, a few bytes of Parquet.
    (layout.sessions_dir() / f"{TMP_PREFIX}c9dwzrm6.json").write_text('{"session_id": "s2", "ho')
    layout.equivalence_dir().mkdir(parents=True)
    (layout.equivalence_dir() / f"{TMP_PREFIX}x1.parquet").write_bytes(b"PAR1\x00\x00")
    con = connect(root)
    assert con.execute("select session_id from sessions").fetchall() == [("s1",)]
    assert not con.execute(
        "select * from information_schema.tables where table_name = 'equivalence'"
    ).fetchall()


def test_a_lease_being_written_is_not_listed_twice(tmp_path):
    root = tmp_path / "store"
    lease = Lease.new("cell-a", "s1", ttl_s=60)
    assert create(lease_path(root, "cell-a"), lease, read_back=False)
    # The temp file a create writes before linking it onto the lease's name, still there.
    folder = lease_path(root, "cell-a").parent
    (folder / f"{TMP_PREFIX}q7.json").write_bytes(lease.to_bytes())
    assert [found.cell_key for found in all_leases(root)] == ["cell-a"]


def test_finished_keeps_every_other_name(tmp_path):
    names = ["a.json", ".hidden.json", f"{TMP_PREFIX}a.json", "b.tmp-.json"]
    assert [p.name for p in finished(tmp_path / n for n in names)] == [
        "a.json",
        ".hidden.json",
        "b.tmp-.json",
    ]

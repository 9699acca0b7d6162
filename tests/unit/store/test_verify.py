"""Issue 17: an ok attempt counts only if its files are whole (store/verify.py, store/read.py)."""

import hashlib
import json
import os
import time

from store.layout import StoreLayout
from store.read import connect, ok_attempts
from store.writer import write_ok_attempt
from tests.unit.store.damage import flip_middle, names_only, truncate
from tests.unit.store.test_writer_read import records, tags
from workers.load.probe import ProbeRow


def two_cells(root):
    layout = StoreLayout(root)
    write_ok_attempt(layout, tags("c1", "a1"), records(40), {"output_tok_per_s": 1.0})
    write_ok_attempt(layout, tags("c2", "a2"), records(40), {"output_tok_per_s": 2.0})
    return layout


def cell_keys(root):
    con = connect(root)
    return [row[0] for row in con.execute("SELECT cell_key FROM cells ORDER BY 1").fetchall()]


def test_the_manifest_records_each_files_size_and_sha256(tmp_path):
    layout = StoreLayout(tmp_path)
    folder = write_ok_attempt(
        layout, tags("c1", "a1"), records(3), {"x": 1}, [ProbeRow("p0", 1, [5], [-0.5])]
    )
    files = json.loads((folder / "manifest.json").read_text())["files"]
    assert [f["name"] for f in files] == ["requests.parquet", "summary.parquet", "probe.parquet"]
    for entry in files:
        data = (folder / entry["name"]).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_bytes_flipped_in_the_middle_leave_the_attempt_out_of_every_view(tmp_path):
    layout = two_cells(tmp_path)
    path = layout.attempt_dir("c1", "a1") / "requests.parquet"
    size = path.stat().st_size
    flip_middle(path)
    assert path.stat().st_size == size
    good, problems = ok_attempts(tmp_path)
    assert [a.cell_key for a in good] == ["c2"]
    assert len(problems) == 1
    assert "cell c1 attempt a1" in problems[0] and str(path) in problems[0]
    assert "checksum mismatch" in problems[0]
    con = connect(tmp_path)
    assert cell_keys(tmp_path) == ["c2"]
    assert con.execute("SELECT DISTINCT cell_key FROM requests").fetchall() == [("c2",)]
    from store.read import damaged

    named = damaged(con)
    assert list(named["cell_key"]) == ["c1"] and list(named["attempt_id"]) == ["a1"]
    assert list(named["file"]) == [str(path)]


def test_a_truncated_file_is_a_size_mismatch(tmp_path):
    layout = two_cells(tmp_path)
    path = layout.attempt_dir("c2", "a2") / "requests.parquet"
    size = path.stat().st_size
    truncate(path)
    _, problems = ok_attempts(tmp_path)
    assert len(problems) == 1 and "cell c2 attempt a2" in problems[0]
    assert f"size mismatch: {size // 2:,} bytes, manifest {size:,}" in problems[0]
    assert cell_keys(tmp_path) == ["c1"]


def test_a_listed_file_that_is_gone_is_named_missing(tmp_path):
    layout = two_cells(tmp_path)
    (layout.attempt_dir("c1", "a1") / "summary.parquet").unlink()
    _, problems = ok_attempts(tmp_path)
    assert len(problems) == 1 and "summary.parquet: unreadable (missing)" in problems[0]


def test_older_manifests_with_names_only_are_read_with_the_footer_check(tmp_path):
    layout = two_cells(tmp_path)
    names_only(layout.attempt_dir("c1", "a1") / "manifest.json")  # as written before issue 17
    flip_middle(layout.attempt_dir("c2", "a2") / "requests.parquet")  # a new manifest, damaged
    assert cell_keys(tmp_path) == ["c1"]
    truncate(layout.attempt_dir("c1", "a1") / "requests.parquet")  # the footer check still applies
    _, problems = ok_attempts(tmp_path)
    assert any("cell c1 attempt a1" in p and "requests.parquet: unreadable" in p for p in problems)
    assert (
        not connect(tmp_path).execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0]
    )


def test_sizes_only_when_checksums_are_not_asked_for(tmp_path):
    layout = two_cells(tmp_path)
    flip_middle(layout.attempt_dir("c1", "a1") / "requests.parquet")
    truncate(layout.attempt_dir("c2", "a2") / "summary.parquet")
    good, problems = ok_attempts(tmp_path, checksums=False)
    assert [a.cell_key for a in good] == ["c1"]  # same size: passes without its checksum
    assert len(problems) == 1 and "size mismatch" in problems[0]


def test_a_remembered_digest_never_hides_a_later_change(tmp_path):
    from store.verify import sha256_file

    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 1000)
    old = time.time() - 60
    os.utime(path, (old, old))  # settled: its digest is remembered
    first = sha256_file(path)
    assert first == hashlib.sha256(b"a" * 1000).hexdigest()
    path.write_bytes(b"b" * 1000)  # same size, new mtime
    assert sha256_file(path) == hashlib.sha256(b"b" * 1000).hexdigest()

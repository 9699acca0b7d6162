import json

import pandas as pd

from store.layout import StoreLayout
from store.read import attempts, connect, ok_attempts
from store.writer import write_failed_attempt, write_ok_attempt
from workers.load.client import RequestRecord
from workers.load.probe import ProbeRow


def records(n):
    return [
        RequestRecord(
            i,
            f"p{i}",
            "measure",
            send_ns=i,
            end_ns=i + 10,
            chunk_ns=[i + 1, i + 2],
            n_chunks=2,
            completion_tokens=3,
        )
        for i in range(n)
    ]


def tags(cell, attempt):
    return {"session_id": "s1", "cell_key": cell, "attempt_id": attempt}


def test_ok_attempts_are_views_and_failed_ones_are_not(tmp_path):
    layout = StoreLayout(tmp_path)
    write_ok_attempt(layout, tags("c1", "a1"), records(3), {"output_tok_per_s": 1.5, "lever": "van"})
    write_failed_attempt(layout, tags("c2", "a2"), "boom", "tail")
    con = connect(tmp_path)
    assert con.execute("select count(*) from requests").fetchone()[0] == 3
    assert con.execute("select cell_key, output_tok_per_s from cells").fetchall() == [("c1", 1.5)]
    found, problems = attempts(tmp_path)
    assert {(a.cell_key, a.status) for a in found} == {("c1", "ok"), ("c2", "failed")}
    assert not problems
    frame = pd.read_parquet(layout.attempt_dir("c1", "a1") / "requests.parquet")
    assert frame["chunk_ns"].iloc[0].tolist() == [1, 2]
    assert set(frame["session_id"]) == {"s1"}


def test_data_without_manifest_is_ignored(tmp_path):
    layout = StoreLayout(tmp_path)
    write_ok_attempt(layout, tags("c1", "a1"), records(2), {"x": 1})
    (layout.attempt_dir("c1", "a1") / "manifest.json").unlink()
    con = connect(tmp_path)
    assert con.execute("select count(*) from duckdb_views() where not internal").fetchone()[0] == 0


def test_corrupt_manifest_is_reported_not_fatal(tmp_path):
    layout = StoreLayout(tmp_path)
    write_ok_attempt(layout, tags("c1", "a1"), records(1), {"x": 1})
    (layout.attempt_dir("c9", "a9")).mkdir(parents=True)
    (layout.attempt_dir("c9", "a9") / "manifest.json").write_text("{trunc")
    found, problems = attempts(tmp_path)
    assert [a.cell_key for a in found] == ["c1"]
    assert len(problems) == 1 and "unreadable manifest" in problems[0]


def test_probe_rows_are_a_view_only_for_attempts_that_ran_the_probe(tmp_path):
    layout = StoreLayout(tmp_path)
    probe = [ProbeRow("p0", 1, [5, 6], [-0.5, -1.5]), ProbeRow("p0", 2, [7, 8], [-0.2, -2.0])]
    write_ok_attempt(layout, tags("c1", "a1"), records(1), {"x": 1}, probe)
    write_ok_attempt(layout, tags("c2", "a2"), records(1), {"x": 2})
    manifest = json.loads((layout.attempt_dir("c1", "a1") / "manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == ["requests.parquet", "summary.parquet", "probe.parquet"]
    rows = connect(tmp_path).execute("SELECT cell_key, position, token_ids, logprobs FROM probes").fetchall()
    assert rows == [("c1", 1, [5, 6], [-0.5, -1.5]), ("c1", 2, [7, 8], [-0.20000000298023224, -2.0])]
    # A failed retry of the same folder leaves no probe rows behind.
    write_failed_attempt(layout, tags("c1", "a1"), "boom", "tail")
    assert not (layout.attempt_dir("c1", "a1") / "probe.parquet").exists()


def test_an_unreadable_probe_file_drops_its_attempt(tmp_path):
    layout = StoreLayout(tmp_path)
    write_ok_attempt(layout, tags("c1", "a1"), records(1), {"x": 1}, [ProbeRow("p0", 1, [5], [-0.5])])
    (layout.attempt_dir("c1", "a1") / "probe.parquet").write_bytes(b"not parquet")
    good, problems = ok_attempts(tmp_path)
    assert good == [] and "probe.parquet: unreadable" in problems[0]


def test_a_cell_left_out_is_named_by_its_label_where_its_manifest_has_one(tmp_path):
    """Issue 31: a user reads cells by label (`run.force` takes one too), not by a 16-hex key."""
    from analysis.load import left_out

    layout = StoreLayout(tmp_path)
    write_ok_attempt(layout, tags("c1", "a1"), records(1), {"x": 1}, label="tiny/van/chat_bench/r0")
    write_failed_attempt(layout, tags("c2", "a2"), "boom", "", label="tiny/suffix-k8/chat_bench/r0")
    write_failed_attempt(layout, tags("c3", "a3"), "older store", "")  # written before labels were
    found, _ = attempts(tmp_path)
    assert {a.cell_key: a.label for a in found} == {
        "c1": "tiny/van/chat_bench/r0",
        "c2": "tiny/suffix-k8/chat_bench/r0",
        "c3": None,
    }
    lines = left_out(connect(tmp_path), {"c1"})
    assert "left out: tiny/suffix-k8/chat_bench/r0 (cell c2): failed (1 attempt; last error: boom)" in lines
    assert "left out: cell c3: failed (1 attempt; last error: older store)" in lines

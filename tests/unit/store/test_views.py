"""connect(): views over cells, sessions and equivalence verdicts; older files read by name."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from store.layout import StoreLayout
from store.read import connect, has_view
from store.writer import write_ok_attempt
from workers.load.client import RequestRecord


def record():
    return RequestRecord(
        0, "p0", "measure", send_ns=0, end_ns=10, chunk_ns=[1], n_chunks=1, completion_tokens=3
    )


def test_older_summaries_lack_new_columns_and_read_as_null(tmp_path):
    layout = StoreLayout(tmp_path)
    tags = {"session_id": "s1", "cell_key": "old", "attempt_id": "s1-1"}
    write_ok_attempt(layout, tags, [record()], {"output_tok_per_s": 1.0})  # before `anchor` existed
    tags = {"session_id": "s2", "cell_key": "new", "attempt_id": "s2-1"}
    write_ok_attempt(layout, tags, [record()], {"output_tok_per_s": 2.0, "anchor": "start"})
    rows = (
        connect(tmp_path).execute("SELECT cell_key, anchor, schema_version FROM cells ORDER BY 1").fetchall()
    )
    assert rows == [("new", "start", 1), ("old", None, 1)]


def test_sessions_view_reads_every_fingerprint_version(tmp_path):
    layout = StoreLayout(tmp_path)
    layout.sessions_dir().mkdir(parents=True)
    old = {"session_id": "s1", "host": "a", "started_at": "2026-01-01T00:00:00+00:00"}
    new = {**old, "session_id": "s2", "hosts": ["a", "b"], "ended_at": "2026-01-01T01:00:00+00:00",
           "gpus": [{"name": "NVIDIA H200", "uuid": "GPU-1"}], "driver_version": "570.1"}  # fmt: skip
    bare = {**old, "session_id": "s3", "gpus": [], "driver_version": None}
    for value in (old, new, bare):
        layout.session_file(value["session_id"]).write_text(json.dumps(value))
    con = connect(tmp_path)
    assert has_view(con, "sessions") and not has_view(con, "cells")
    frame = con.execute("SELECT * FROM sessions ORDER BY session_id").df()
    assert frame["session_id"].tolist() == ["s1", "s2", "s3"]
    assert frame["driver_version"].isna().tolist() == [True, False, True]
    assert frame["gpus"].iloc[1][0]["uuid"] == "GPU-1" and len(frame["gpus"].iloc[2]) == 0


def test_equivalence_view_only_when_verdicts_exist(tmp_path):
    layout = StoreLayout(tmp_path)
    assert not has_view(connect(tmp_path), "equivalence")
    layout.equivalence_dir().mkdir(parents=True)
    row = {"session_id": "s1", "model": "m", "corpus": "mix", "lever": "suffix", "k": 8, "verdict": "pass"}
    pq.write_table(pa.Table.from_pylist([row]), layout.equivalence_file("s1"))
    assert connect(tmp_path).execute("SELECT verdict FROM equivalence").fetchall() == [("pass",)]

"""Issue 19: the store on S3 (moto's server on 127.0.0.1) reads and writes as a local folder does.

Each test that takes `store_root` runs twice: a local folder and s3://bucket/results.
"""

import json
import pickle

import pyarrow.fs as pafs
import pytest
from rich.console import Console

from analysis.study import load_study, store_root_from_env
from grid.cli.status import status
from grid.orchestrate.ledger import DAMAGED, DONE, FAILED, build_ledger, select
from store.atomic import write_json
from store.fs import StoreError, StorePath, open_store
from store.layout import StoreLayout
from store.read import attempts, connect, damaged, has_view, ok_attempts
from store.space import store_problem
from store.writer import write_failed_attempt, write_ok_attempt
from tests.s3server import options_override
from tests.unit.analysis.synthetic_store import build_store
from tests.unit.grid.cli.test_status_integrity import damaged_store
from tests.unit.grid.orchestrate.test_ledger import smoke_cells
from tests.unit.store.damage import truncate
from tests.unit.store.test_writer_read import records, tags
from vocab.paths import store_path


def test_attempts_written_and_read_back_with_views(store_root):
    layout = StoreLayout(store_root)
    write_ok_attempt(layout, tags("c1", "a1"), records(3), {"output_tok_per_s": 1.5, "lever": "van"})
    write_failed_attempt(layout, tags("c2", "a2"), "boom", "tail")
    write_json(layout.session_file("s1"), {"session_id": "s1", "hosts": ["h1"], "ended_at": None})
    found, problems = attempts(store_root)
    assert {(a.cell_key, a.status) for a in found} == {("c1", "ok"), ("c2", "failed")}
    assert not problems
    good, _ = ok_attempts(store_root)
    assert [a.cell_key for a in good] == ["c1"]
    con = connect(store_root)
    assert con.execute("select count(*) from requests").fetchone()[0] == 3
    assert con.execute("select cell_key, output_tok_per_s from cells").fetchall() == [("c1", 1.5)]
    assert con.execute("select session_id, hosts from sessions").fetchall() == [("s1", ["h1"])]
    assert not has_view(con, "equivalence")
    assert con.execute("select count(*) from attempts").fetchone()[0] == 2


def test_data_without_manifest_does_not_count(store_root):
    layout = StoreLayout(store_root)
    write_ok_attempt(layout, tags("c1", "a1"), records(2), {"x": 1})
    (layout.attempt_dir("c1", "a1") / "manifest.json").unlink()
    assert attempts(store_root) == ([], [])
    assert not has_view(connect(store_root), "cells")


def test_ledger_and_resume_select_what_is_not_done(store_root):
    layout = StoreLayout(store_root)
    done, failed, _, pending = smoke_cells()
    write_ok_attempt(layout, tags(done.key, "s1-a1"), records(2), {"valid": True})
    write_failed_attempt(layout, tags(failed.key, "s1-a2"), "boom", "")
    ledger = build_ledger(store_root)
    assert ledger.status(done.key) == DONE and ledger.status(failed.key) == FAILED
    todo = select([done, failed, pending], ledger, "resume", [])
    assert [c.key for c in todo] == [failed.key, pending.key]


def test_damaged_object_is_named_and_its_cell_measured_again(store_root):
    layout = StoreLayout(store_root)
    cell = smoke_cells()[0]
    folder = write_ok_attempt(layout, tags(cell.key, "s1-a1"), records(40), {"valid": True})
    truncate(folder / "requests.parquet")
    ledger = build_ledger(store_root)
    assert ledger.status(cell.key) == DAMAGED
    [problem] = ledger.problems
    assert f"{folder / 'requests.parquet'}: unreadable (size mismatch" in problem
    con = connect(store_root)
    assert not has_view(con, "cells")
    assert damaged(con)["file"].tolist() == [str(folder / "requests.parquet")]


def test_status_reads_the_store_url(store_root):
    hurt, path = damaged_store(store_root)
    overrides = ["experiment=smoke", f"paths.store={store_root}"]
    if isinstance(store_root, StorePath):
        overrides.extend(options_override(dict(store_root.store.options)["endpoint_override"]))
        assert str(path).startswith("s3://")
    console = Console(record=True, width=400)
    assert status(overrides, console) == 0
    out = console.export_text()
    assert f"store: {hurt.label}: cell {hurt.key} attempt s1-a2: {path}: unreadable (checksum mismatch" in out
    assert "done 1," in out and "damaged 1 (measured again on resume)" in out


def test_load_study_reads_the_same_answer_from_s3(tmp_path, s3_url):
    local = build_store(tmp_path / "local")
    url, options = s3_url
    remote = open_store(url, options)
    pafs.copy_files(str(local), remote.store.base, destination_filesystem=remote.store.fs)
    here, there = load_study(local), load_study(remote)
    assert there.table1.equals(here.table1)
    assert there.best_k.equals(here.best_k)
    assert there.notes == here.notes
    assert len(there.sessions) == len(here.sessions) == 2
    assert len(there.equivalence) == len(here.equivalence) > 0


def test_store_problem_probes_the_bucket(s3_url, s3_endpoint):
    url, options = s3_url
    root = open_store(url, options)
    assert store_problem(root) is None
    assert list(root.glob("cells/*")) == []  # the probe object is gone
    missing = open_store("s3://no-such-bucket-here/results", options)
    assert "store cannot take results: s3://no-such-bucket-here/results is not writable" in store_problem(
        missing
    )


def test_store_urls_local_paths_and_secrets():
    assert open_store("/tmp/x") == open_store("file:///tmp/x")
    assert not isinstance(store_path("results"), StorePath)
    with pytest.raises(StoreError, match="credentials come from the environment"):
        open_store("s3://bucket/p", {"secret_key": "x"})
    with pytest.raises(StoreError, match="URL stores"):
        open_store("/tmp/x", {"region": "eu-west-1"})


def test_a_store_path_pickles_as_its_url_and_rebuilds_its_filesystem(s3_url):
    url, options = s3_url
    root = open_store(url, options)
    write_json(root / "sessions" / "s.json", {"a": 1})
    again = pickle.loads(pickle.dumps(root))
    assert again == root and str(again) == url
    assert (again / "sessions" / "s.json").read_text().startswith("{")
    assert b"testing" not in pickle.dumps(root)  # no credentials travel with it


def test_notebooks_open_a_url_store_from_the_environment(s3_url):
    url, options = s3_url
    root = store_root_from_env({"LEVER_GRID_STORE": url, "LEVER_GRID_STORE_OPTIONS": json.dumps(options)})
    assert isinstance(root, StorePath) and str(root) == url
    assert dict(root.store.options) == options


def test_preflight_names_a_bucket_it_cannot_write(s3_url):
    from grid.checks.preflight import store_problem as preflight_problem

    url, options = s3_url
    assert preflight_problem(open_store(url, options)) is None
    problem = preflight_problem(open_store("s3://no-such-bucket-here/results", options))
    assert problem.startswith("paths.store s3://no-such-bucket-here/results is not writable (")

"""The smoke grid on the real CPU engine with its store in a bucket (issue 19).

A local S3 API (moto, tests/s3server.py) stands for the bucket; the workers write
their cells and engine logs straight to it, and everything reads them back from it.
"""

from __future__ import annotations

from store.fs import open_store
from store.read import connect
from tests.engine.conftest import describe, engine_processes
from tests.engine.test_grid_run import NUM_PROMPTS, run_small
from tests.s3server import options_override


def test_the_smoke_grid_on_the_cpu_engine_writes_to_and_resumes_from_a_bucket(s3_url, s3_endpoint):
    url, options = s3_url
    # About the store, not the gates: a loaded machine's INVALID cell must not run again on resume.
    one_cell = ["grid.levers=[van]", "grid.corpora=[code_complete]", "run.keep_invalid=true"]
    one_cell += options_override(s3_endpoint)
    code, output = run_small(url, *one_cell)
    assert code == 0, output
    root = open_store(url, options)
    con = connect(root)
    cells = con.execute("SELECT lever, corpus, n_ok, valid FROM cells").df()
    assert list(cells["lever"]) == ["van"] and int(cells["n_ok"].iloc[0]) == NUM_PROMPTS, cells
    measured = con.execute("SELECT count(*) FROM requests WHERE phase = 'measure'").fetchone()[0]
    assert measured == NUM_PROMPTS
    # The engine's log went from the worker's node to the bucket, beside the results.
    logs = list(root.glob("logs/*/*.log"))
    assert len(logs) == 1 and "GET /metrics" in logs[0].read_text(errors="replace")
    # Resume reads the bucket: nothing is left to run.
    code, output = run_small(url, *one_cell)
    assert code == 0 and "0 of 1 cells to run" in output, output
    assert not (left := engine_processes()), describe(left)

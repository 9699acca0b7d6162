"""Issue 19: the smoke grid on the fake cluster with the store in S3 (moto's server on 127.0.0.1).

Workers write straight to the bucket from their node (the StorePath travels as URL + options, the
credentials come from each node's environment); engine logs land beside the results.
"""

from __future__ import annotations

from analysis.study import load_study
from grid.orchestrate.run import run
from store.fs import open_store
from store.read import attempts, connect
from tests.s3server import options_override
from tests.scheduling.conftest import stub_overrides
from tests.scheduling.test_faults import CELLS, kill_driver_after_first_cell, quiet


def s3_overrides(inputs, cluster, url, endpoint, *extra):
    """stub_overrides with paths.store pointed at the bucket."""
    base = [o for o in stub_overrides(inputs, cluster, *extra) if not o.startswith("paths.store=")]
    return [*base, f"paths.store={url}", *options_override(endpoint)]


def ok_counts(root):
    found, problems = attempts(root)
    assert not problems
    counts = {}
    for a in found:
        if a.status == "ok":
            counts[a.cell_key] = counts.get(a.cell_key, 0) + 1
    return counts


def test_smoke_grid_on_s3_then_resume_reads_it_back(cluster, inputs, s3_url, s3_endpoint, no_leaks):
    url, options = s3_url
    root = open_store(url, options)
    overrides = s3_overrides(inputs, cluster, url, s3_endpoint)
    assert run(overrides, quiet()) == 0
    assert sorted(ok_counts(root).values()) == [1] * CELLS
    assert not (inputs / "store").exists()  # nothing went to a local store
    # Engine logs beside the results, one per launch (smoke: van and suffix); node records stay on the node.
    logs = list(root.glob("logs/*/*.log"))
    assert len(logs) == 2 and all(log.stat().st_size > 0 for log in logs)
    assert not list(root.glob("engines/*/*.json"))
    # Resume: everything is in the store, nothing runs again.
    assert run(overrides, quiet()) == 0
    assert sorted(ok_counts(root).values()) == [1] * CELLS
    con = connect(root)
    assert con.execute("SELECT count(*) FROM cells").fetchone()[0] == CELLS
    assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1  # the rerun had nothing to do
    study = load_study(root)
    assert len(study.measured) == CELLS


def test_driver_killed_mid_grid_on_s3_then_rerun_does_only_the_rest(
    cluster, inputs, s3_url, s3_endpoint, no_leaks
):
    url, options = s3_url
    root = open_store(url, options)
    overrides = s3_overrides(inputs, cluster, url, s3_endpoint, "+engine.env.STUB_DELAY_S=0.05")
    overrides.append("ray.max_in_flight=1")
    kill_driver_after_first_cell(overrides, lambda: ok_counts(root))
    done_before = set(ok_counts(root))
    assert 0 < len(done_before) < CELLS
    assert run(overrides, quiet()) == 0
    assert sorted(ok_counts(root).values()) == [1] * CELLS  # every cell once: no duplicates

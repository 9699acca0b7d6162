"""A cell whose real engine cannot start fails cleanly: outcome, manifest, no processes."""

from __future__ import annotations

import dataclasses

from grid.compose import compose_config
from grid.expand import expand, to_config
from grid.paths import project_path
from grid.plan import group_by_engine
from store.read import attempts, connect
from tests.engine.conftest import engine_processes
from workers.runner import RunContext, run_group


def test_engine_that_cannot_start_fails_the_cells_and_leaves_nothing(tmp_path):
    config = to_config(compose_config(["experiment=smoke", "grid.levers=[van]"]))
    group = group_by_engine(expand(config))[0]
    broken_model = dataclasses.replace(group.spec.model, path=str(tmp_path / "no-such-model"))
    broken = dataclasses.replace(group, spec=dataclasses.replace(group.spec, model=broken_model))
    ctx = RunContext(
        "fail-session",
        tmp_path / "store",
        project_path(".cache"),
        project_path(".cache/models"),
        project_path(".cache/data"),
    )
    outcomes = run_group(broken, ctx)
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert "exited with code" in outcomes[0].error
    found, _ = attempts(tmp_path / "store")
    assert len(found) == 2 and all(a.status == "failed" for a in found)
    assert "no-such-model" in (found[0].folder / "manifest.json").read_text()
    # Nothing half-written counts as a result.
    assert (
        connect(tmp_path / "store")
        .execute("select count(*) from duckdb_views() where not internal")
        .fetchone()[0]
        == 0
    )
    assert not engine_processes()

"""`python -m grid run`: resolve everything first, then run one loop, then report."""

from __future__ import annotations

import sys
from dataclasses import asdict

from rich.console import Console

from analysis.summary import latest_cells, render
from grid.cells import stable_hash
from grid.compose import compose_config
from grid.expand import expand, to_config
from grid.paths import project_path
from grid.plan import group_by_engine
from grid.preflight import check_inputs
from grid.session import fingerprint, new_session_id
from store.atomic import write_json
from store.layout import StoreLayout
from store.writer import utc_now
from workers.runner import CellOutcome, RunContext


def run(overrides: list[str], console: Console | None = None) -> int:
    """Run the grid the overrides describe; return the exit code (1 if any cell failed)."""
    # Wide enough for the summary table when output goes to a file or CI log.
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    config = to_config(compose_config(overrides))
    cells = expand(config)
    groups = group_by_engine(cells)
    paths = config.paths
    ctx = RunContext(
        session_id=config.session_id or new_session_id(),
        store_root=project_path(paths.store),
        cache_dir=project_path(paths.cache_dir),
        models_dir=project_path(paths.models_dir),
        data_dir=project_path(paths.data_dir),
    )
    check_inputs(cells, ctx.models_dir, ctx.data_dir)
    layout = StoreLayout(ctx.store_root)
    session = fingerprint(ctx.session_id, stable_hash(asdict(config)))
    write_json(layout.session_file(ctx.session_id), session)
    console.print(
        f"session {ctx.session_id}: {len(cells)} cells on {len(groups)} engine launches -> {ctx.store_root}"
    )

    def report(outcome: CellOutcome) -> None:
        figure = f"{outcome.output_tok_per_s:,.1f} tok/s" if outcome.output_tok_per_s else outcome.error
        console.print(
            f"  [{'green' if outcome.status == 'ok' else 'red'}]{outcome.status}[/] {outcome.label}: {figure}"
        )

    from grid.schedule import run_groups  # Ray only once everything else checked out

    outcomes = run_groups(groups, ctx, config.ray, report)
    write_json(layout.session_file(ctx.session_id), {**session, "ended_at": utc_now()})
    render(latest_cells(ctx.store_root, ctx.session_id), console)
    failed = [o for o in outcomes if o.status != "ok"]
    console.print(f"done {len(outcomes) - len(failed)}, failed {len(failed)}")
    return 1 if failed else 0

"""`python -m grid run`: resolve everything first, then run one loop, then report."""

from __future__ import annotations

import sys
from dataclasses import asdict

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from analysis.gpu_time import share_line
from analysis.summary import latest_cells, render, render_repeats
from grid.anchor import anchor_cells
from grid.cells import stable_hash
from grid.compose import compose_config
from grid.cost import launch_order
from grid.errors import ConfigError
from grid.expand import expand, to_config
from grid.ledger import build_ledger, select
from grid.paths import project_path
from grid.plan import EngineGroup, group_by_engine
from grid.preflight import check_inputs
from grid.prompt_audit import audit_groups, check_no_repeats
from grid.schema import Config
from grid.session import end_fingerprint, fingerprint, new_session_id
from grid.verdicts import write_verdicts
from store.atomic import write_json
from store.layout import StoreLayout
from workers.runner import CellOutcome, RunContext

RUN_MODES = ("resume", "failed", "all")


def make_console() -> Console:
    # Wide enough for the summary table when output goes to a file or CI log.
    return Console(width=None if sys.stdout.isatty() else 160)


def run(overrides: list[str], console: Console | None = None) -> int:
    """Run what the store lacks of the grid; return 1 if any cell is left failed."""
    console = console or make_console()
    config = to_config(compose_config(overrides))
    if config.run.mode not in RUN_MODES:
        raise ConfigError(f"run.mode must be one of {', '.join(RUN_MODES)}, got '{config.run.mode}'")
    if config.run.max_attempts < 1:
        raise ConfigError(f"run.max_attempts must be >= 1, got {config.run.max_attempts}")
    cells = expand(config)
    paths = config.paths
    ctx = RunContext(
        session_id=config.session_id or new_session_id(),
        store_root=project_path(paths.store),
        cache_dir=project_path(paths.cache_dir),
        models_dir=project_path(paths.models_dir),
        data_dir=project_path(paths.data_dir),
        gates=config.gates,
    )
    ledger = build_ledger(ctx.store_root)
    for problem in ledger.problems:
        console.print(f"[yellow]store:[/] {problem}")
    todo = select(cells, ledger, config.run.mode, config.run.force, config.run.keep_invalid)
    # A session with something to measure also measures its own drift.
    anchors = anchor_cells(config) if todo else None
    check_inputs(todo + list(anchors or ()), ctx.models_dir)
    phases = [launch_order(group_by_engine(todo), config.plan)]
    if anchors:
        phases = [group_by_engine([anchors[0]]), *phases, group_by_engine([anchors[1]])]
    # Every measured prompt new to its engine, checked on the real corpora before any launch.
    audit = audit_groups(
        [g for groups in phases for g in groups], ctx.data_dir, config.gates.equivalence.probe_prompts
    )
    if not config.load.allow_repeats:
        check_no_repeats(audit)
    console.print(
        f"session {ctx.session_id}: {len(todo)} of {len(cells)} cells to run "
        f"({len(cells) - len(todo)} already in the store) on {len(phases[len(phases) // 2])} engine launches"
        + (
            f", plus the drift anchor {anchors[0].label.removesuffix('/anchor-start')} first and last"
            if anchors
            else ""
        )
        + f" -> {ctx.store_root}"
    )
    outcomes: list[CellOutcome] = []
    if todo:
        outcomes = launch(phases, ctx, config, console)
        report_verdicts(write_verdicts(ctx.store_root, ctx.session_id, config.gates.equivalence), console)
    final = {o.cell_key: o for o in outcomes}  # the last attempt of each cell decides
    failed = [o for o in final.values() if o.status != "ok"]
    session_cells = latest_cells(ctx.store_root, ctx.session_id)
    render(session_cells, console)
    if config.grid.repeats > 1 and not session_cells.empty:
        render_repeats(session_cells, console)
    if not session_cells.empty and (share := share_line(session_cells)):
        console.print(share)
    console.print(
        f"done {len(final) - len(failed)}, failed {len(failed)}, skipped {len(cells) - len(todo)} "
        f"(attempts {len(outcomes)})"
    )
    for outcome in failed:
        console.print(f"[red]failed[/] {outcome.label}: {outcome.error}")
    return 1 if failed else 0


def report_verdicts(frame: pd.DataFrame, console: Console) -> None:
    """One line per lever cell: does it say what van says?"""
    for row in frame.itertuples():
        colour = {"pass": "green", "fail": "red"}.get(row.verdict, "yellow")
        console.print(
            f"equivalence [{colour}]{row.verdict}[/] {row.model}/{row.lever}"
            f"{f'-k{row.k}' if row.k else ''}/{row.corpus}: {row.reason}"
        )


def launch(
    phases: list[list[EngineGroup]], ctx: RunContext, config: Config, console: Console
) -> list[CellOutcome]:
    """Write the session record, run the phases' groups on Ray with a live progress bar."""
    layout = StoreLayout(ctx.store_root)
    session = fingerprint(ctx.session_id, stable_hash(asdict(config)))
    write_json(layout.session_file(ctx.session_id), session)
    total = sum(len(g.cells) for groups in phases for g in groups)
    counts = {"ok": 0, "failed": 0}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("cells", total=total)

        def report(outcome: CellOutcome) -> None:
            counts["ok" if outcome.status == "ok" else "failed"] += 1
            latest = f"{outcome.output_tok_per_s:,.1f} tok/s" if outcome.output_tok_per_s else "-"
            progress.update(
                task,
                completed=counts["ok"],
                description=f"done {counts['ok']} failed {counts['failed']} | last {outcome.label}: {latest}",
            )
            if outcome.status != "ok":
                progress.console.print(f"[red]attempt failed[/] {outcome.label}: {outcome.error}")

        from grid.schedule import run_phases  # Ray only once everything else checked out

        outcomes = run_phases(phases, ctx, config.ray, config.run.max_attempts, report)
    write_json(layout.session_file(ctx.session_id), end_fingerprint(session, ctx.store_root))
    return outcomes

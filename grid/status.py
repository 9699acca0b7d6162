"""`python -m grid status`: the grid's cells as the store sees them."""

from __future__ import annotations

import time
from collections import Counter

from rich.console import Console
from rich.table import Table

from analysis.gpu_time import share_line
from analysis.summary import latest_cells
from grid.compose import check_run_mode, compose_config
from grid.expand import expand, to_config
from grid.ledger import DAMAGED, DONE, FAILED, INTERRUPTED, INVALID, PENDING, build_ledger
from store.lease import all_leases
from vocab.paths import store_path


def status(overrides: list[str], console: Console | None = None, checksums: bool = True) -> int:
    """Print done / invalid / failed / interrupted / damaged / pending counts, each cell's last error,
    every damaged file by name, the cells other drivers hold leases on (and their owners),
    and the GPU time share.

    A cell is done only if its files are whole: sizes and sha256 checksums as
    recorded (`checksums=False`, `status --quick`: sizes only).
    """
    console = console or Console()
    cfg = compose_config(overrides)
    check_run_mode(cfg)
    config = to_config(cfg)
    cells = expand(config)
    root = store_path(config.paths.store, config.paths.store_options)
    ledger = build_ledger(root, checksums)
    labels = {c.key: c.label for c in cells}
    damaged = {str(d): d for d in ledger.damaged}
    for problem in ledger.problems:
        label = labels.get(damaged[problem].cell_key) if problem in damaged else None
        console.print(f"[yellow]store:[/] {f'{label}: ' if label else ''}{problem}")
    counts = Counter(ledger.status(c.key) for c in cells)
    invalid_note = "kept (run.keep_invalid)" if config.run.keep_invalid else "measured again on resume"
    console.print(
        f"experiment {config.name}: {len(cells)} cells: done {counts[DONE]}, "
        f"invalid {counts[INVALID]} ({invalid_note}), failed {counts[FAILED]}, "
        f"interrupted {counts[INTERRUPTED]}, damaged {counts[DAMAGED]} (measured again on resume), "
        f"pending {counts[PENDING]}"
    )
    now = time.time()
    for lease in all_leases(root):
        if (label := labels.get(lease.cell_key)) is None:
            continue
        if lease.expired(now):
            console.print(
                f"[yellow]stale lease[/] {label}: {lease.holder()}, expired {now - lease.expires_at:,.0f} s "
                "ago (its driver is gone; the next run takes it over)"
            )
        else:
            console.print(
                f"leased: {label}: being measured by {lease.holder()}, "
                f"lease renewed until {lease.expires_at - now:,.0f} s from now"
            )
    older = (
        f"; {ledger.footer_only} older attempts record no checksums: their Parquet footers checked"
        if ledger.footer_only
        else ""
    )
    console.print(
        ("files checked: sizes and sha256 checksums" if checksums else "files checked: sizes only (--quick)")
        + older
    )
    measured = latest_cells(root, checksums=checksums)
    if not measured.empty and (
        line := share_line(measured[measured["cell_key"].isin({c.key for c in cells})])
    ):
        console.print(line)
    table = Table(title="cells not done")
    for header in ("cell", "key", "status", "attempts", "last error"):
        table.add_column(header, overflow="fold")
    for cell in cells:
        state = ledger.states.get(cell.key)
        if state is None or state.status != DONE:
            error = (state.last_error or "").splitlines()[0][:120] if state and state.last_error else ""
            table.add_row(
                cell.label, cell.key, ledger.status(cell.key), str(state.attempts if state else 0), error
            )
    if table.row_count:
        console.print(table)
    return 0

"""One console width for every command, and tables that keep their key columns whole at any width.

In a terminal a console takes the terminal's width (rich asks the terminal; `COLUMNS=` overrides
it). Anywhere else (a log file, a pipe, CI) it is LOG_WIDTH columns, the same for every command,
unless `COLUMNS` says otherwise.

A table too wide for its console drops its least important columns (`fit_table`, in the order the
caller gives) and names them below it, instead of letting rich shorten every column to `1,4…` or
`VAL…`. Every value keeps its longest word whole (a number, a label, VALID / INVALID are one word
each); a no_wrap column (labels, the verdict) keeps its whole value on one line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

# The width of every table written to a file or a pipe (a log): wide enough for the summary's key
# columns and its common figures, narrow enough to read in an editor or a CI log.
LOG_WIDTH = 100


def console_width(file: TextIO | None = None) -> int | None:
    """None (rich asks the terminal) on a terminal; else COLUMNS if set, else LOG_WIDTH."""
    stream = file if file is not None else sys.stdout
    if stream.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else LOG_WIDTH


def make_console(file: TextIO | None = None) -> Console:
    """The console every command prints through: the terminal's width, or LOG_WIDTH in a log."""
    return Console(file=file, width=console_width(file))


@dataclass(frozen=True)
class Col:
    """A table column: its header, alignment, and whether its values stay on one line."""

    header: str
    justify: Literal["left", "right", "center"] = "right"
    no_wrap: bool = True
    # Free text (an error message): a word longer than FOLD is folded over lines rather than
    # widening the table.
    fold: bool = False
    # A wrapping column narrower than this (or its widest value) reads badly: columns in `drop` go
    # first. Only when nothing is left to drop does it narrow down to its longest word.
    want: int = 0


FOLD = 20


def _widths(col: Col, cells: Sequence[str], soft: bool) -> tuple[int, int]:
    """(narrowest, widest) content width of a column: a no_wrap value whole, any other value's
    longest word (`soft`: at least its `want`); the header may always wrap at its spaces."""
    words = [cell_len(w) for w in col.header.split()] or [0]
    lines = [cell_len(line) for cell in cells for line in cell.splitlines() or [""]]
    widest = max([cell_len(col.header), *lines])
    if col.no_wrap:
        return max([*words, *lines]), widest
    longest = max([0, *(cell_len(w) for cell in cells for w in cell.split())])
    if col.fold:  # folded at FOLD, or (nothing else left to drop) wherever the table needs
        longest = min(longest, FOLD) if soft else 0
    narrow = max([*words, longest])
    return (max(narrow, min(col.want, widest)) if soft else narrow), widest


def fit_table(
    width: int,
    title: str | None,
    columns: Sequence[Col],
    rows: Sequence[Sequence[str]],
    drop: Sequence[str] = (),
) -> tuple[Table, list[str]]:
    """The table for a console `width` columns wide, and the headers it left out.

    Columns named in `drop` go, first to last, until the kept ones fit at their narrowest (see
    _widths; a wrapping column at its `want`). The widths are then set here, not by rich (whose
    last resort cuts every column alike): each kept column gets its narrowest width, and the spare
    columns go, one at a time, to the column furthest below its widest. If the kept columns are
    still too wide at their narrowest, the table is wider than `width` (print it with crop=False):
    a value is never cut. Values are plain text (no markup).
    """
    left_out: list[str] = []
    droppable = [header for header in drop if any(c.header == header for c in columns)]
    while True:
        kept = [i for i, c in enumerate(columns) if c.header not in left_out]
        ranges = [_widths(columns[i], [row[i] for row in rows], soft=True) for i in kept]
        room = width - (len(kept) + 1) - 2 * len(kept)  # borders and one space each side of a cell
        if sum(n for n, _ in ranges) <= room:
            break
        if not droppable:
            ranges = [_widths(columns[i], [row[i] for row in rows], soft=False) for i in kept]
            break
        left_out.append(droppable.pop(0))
    table = Table(title=title)
    for i in kept:
        col = columns[i]
        table.add_column(col.header, justify=col.justify, no_wrap=col.no_wrap, overflow="fold")
    for row in rows:
        table.add_row(*(Text(row[i]) for i in kept))
    if sum(w for _, w in ranges) > room:  # rich would cut: set every width
        sizes = [n for n, _ in ranges]
        for _ in range(max(0, room - sum(sizes))):
            short = [(w - s, j) for j, (s, (_, w)) in enumerate(zip(sizes, ranges, strict=True)) if s < w]
            if not short:
                break
            sizes[max(short)[1]] += 1
        for column, size in zip(table.columns, sizes, strict=True):
            column.width = size
        if sum(sizes) > room:
            table.width = sum(sizes) + 3 * len(sizes) + 1
    return table, left_out


def print_table(
    console: Console,
    title: str | None,
    columns: Sequence[Col],
    rows: Sequence[Sequence[str]],
    drop: Sequence[str] = (),
    whole: str | None = None,
) -> list[str]:
    """Print `fit_table`'s table on `console`, then a line naming the columns it left out (and
    where else they are: `whole`); return those columns."""
    table, left_out = fit_table(console.width, title, columns, rows, drop)
    console.print(table, crop=False)
    if left_out:
        console.print(
            f"not shown at {console.width} columns: {', '.join(left_out)} "
            f"(a wider terminal or COLUMNS=200 shows them{f'; so does {whole}' if whole else ''})",
            markup=False,
            highlight=False,
        )
    return left_out


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub pipe table (`format=md`): every value whole, `|` escaped, None and NaN as empty."""

    def cell(value: object) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return ""
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_rows(fmt: str, headers: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO) -> None:
    """A command's table as `format=csv` (a header, then a row each) or `format=md` (markdown_table)."""
    if fmt == "md":
        out.write(markdown_table(headers, rows))
        return
    import csv

    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(["" if v is None else v for v in row] for row in rows)

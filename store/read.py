"""Read the store: manifests decide what counts; DuckDB views over the Parquet files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from store.layout import PROBE, REQUESTS, SUMMARY, StoreLayout


@dataclass(frozen=True)
class Attempt:
    """One attempt's manifest as found in the store."""

    folder: Path
    cell_key: str
    attempt_id: str
    session_id: str
    status: str
    error: str | None
    written_at: str
    # The gates' verdict of an ok attempt; None in manifests written before it was recorded.
    valid: bool | None = None


def attempts(root: Path) -> tuple[list[Attempt], list[str]]:
    """Every readable manifest, and a problem line for each unreadable one (skipped)."""
    found, problems = [], []
    for path in StoreLayout(root).manifests():
        try:
            data = json.loads(path.read_text())
            found.append(
                Attempt(
                    path.parent,
                    data["cell_key"],
                    data["attempt_id"],
                    data["session_id"],
                    data["status"],
                    data.get("error"),
                    data.get("written_at", ""),
                    data.get("valid"),
                )
            )
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"{path}: unreadable manifest ({exc}); ignored")
    return found, problems


def unreadable(attempt: Attempt) -> str | None:
    """None if the attempt's Parquet files open; else what is wrong with them."""
    probe = attempt.folder / PROBE
    for path in [attempt.folder / REQUESTS, attempt.folder / SUMMARY, *([probe] if probe.exists() else [])]:
        try:
            pq.read_metadata(path)
        except (OSError, ValueError) as exc:
            return f"{path}: unreadable ({type(exc).__name__}: {exc}); ignored, the cell will run again"
    return None


def measured_valid(attempt: Attempt) -> bool:
    """Whether an ok attempt passed its validity gates (older manifests: its summary's `valid`)."""
    if attempt.valid is not None:
        return attempt.valid
    try:
        column = pq.read_table(attempt.folder / SUMMARY, columns=["valid"]).column("valid").to_pylist()
    except (OSError, ValueError, KeyError):
        return True  # no verdict recorded: treat as measured, as before
    return bool(column and column[0])


def ok_attempts(root: Path) -> tuple[list[Attempt], list[str]]:
    """Attempts whose manifest says ok and whose files are readable, and a line per problem."""
    found, problems = attempts(root)
    good = []
    for attempt in found:
        if attempt.status != "ok":
            continue
        if (problem := unreadable(attempt)) is not None:
            problems.append(problem)
        else:
            good.append(attempt)
    return good, problems


def ok_files(root: Path, name: str) -> list[str]:
    """Paths of `name` (requests/summary Parquet) from readable ok attempts."""
    good, _ = ok_attempts(root)
    return [str(a.folder / name) for a in good]


def _sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def _create_view(con: duckdb.DuckDBPyConnection, view: str, reader: str, paths: list[str]) -> None:
    """CREATE VIEW over `paths` with `reader`; none when there are no files (the view is then absent).

    union_by_name: files written by older harness versions lack newer columns,
    which read as NULL; see docs/store.md.
    """
    if paths:
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM {reader}({_sql_list(paths)}, union_by_name=true)")


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per kind of record in the store.

    requests     per-request rows of ok attempts
    cells        one summary row per ok attempt (anchor runs included: column `anchor`)
    sessions     one row per session fingerprint (<root>/sessions/*.json)
    probes       top-k prompt logprobs of ok attempts that ran the probe (workers/probe.py)
    equivalence  output-equivalence verdicts (<root>/equivalence/*.parquet), when any exist

    A view exists only when it has at least one file; `has_view` says which do.
    Notebooks, the report and `python -m grid summary` all read through here.
    """
    con = duckdb.connect()
    layout = StoreLayout(root)
    good, _ = ok_attempts(root)
    for view, name in (("requests", REQUESTS), ("cells", SUMMARY)):
        _create_view(con, view, "read_parquet", [str(a.folder / name) for a in good])
    probes = [str(a.folder / PROBE) for a in good if (a.folder / PROBE).exists()]
    _create_view(con, "probes", "read_parquet", probes)
    sessions = sorted(str(p) for p in layout.sessions_dir().glob("*.json"))
    _create_view(con, "sessions", "read_json_auto", sessions)
    verdicts = sorted(str(p) for p in layout.equivalence_dir().glob("*.parquet"))
    _create_view(con, "equivalence", "read_parquet", verdicts)
    return con


def has_view(con: duckdb.DuckDBPyConnection, view: str) -> bool:
    """Whether `connect` created `view` (it does not when the store has no such files)."""
    query = "SELECT count(*) FROM duckdb_views() WHERE view_name = $view AND NOT internal"
    return bool(con.execute(query, {"view": view}).fetchone()[0])

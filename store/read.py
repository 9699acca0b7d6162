"""Read the store: manifests decide what counts; DuckDB views over the Parquet files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from store.layout import REQUESTS, SUMMARY, StoreLayout


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
                )
            )
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"{path}: unreadable manifest ({exc}); ignored")
    return found, problems


def unreadable(attempt: Attempt) -> str | None:
    """None if the attempt's Parquet files open; else what is wrong with them."""
    for name in (REQUESTS, SUMMARY):
        path = attempt.folder / name
        try:
            pq.read_metadata(path)
        except (OSError, ValueError) as exc:
            return f"{path}: unreadable ({type(exc).__name__}: {exc}); ignored, the cell will run again"
    return None


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


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views `requests` and `cells` over the store's ok attempts."""
    con = duckdb.connect()
    good, _ = ok_attempts(root)
    for view, name in (("requests", REQUESTS), ("cells", SUMMARY)):
        files = [str(a.folder / name) for a in good]
        if files:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet([{listed}], union_by_name=true)")
    return con

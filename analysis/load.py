"""Read the store into DataFrames for the analysis, through store.read.connect only."""

from __future__ import annotations

from collections.abc import Collection

import duckdb
import pandas as pd

from store.read import has_view

# Latest ok attempt first (attempt ids start with the session id, which sorts by time).
LATEST = "row_number() OVER (PARTITION BY {key} ORDER BY attempt_id DESC) = 1"


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> set[str]:
    return {row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()}


def measured_cells(con: duckdb.DuckDBPyConnection, cell_keys: Collection[str] | None = None) -> pd.DataFrame:
    """Latest ok attempt of every cell that is not a drift anchor; only `cell_keys` when given.

    INVALID cells are included (column `valid`); the analysis decides what to leave out.
    """
    if not has_view(con, "cells"):
        columns = [
            "session_id",
            "cell_key",
            "model",
            "corpus",
            "lever",
            "k",
            "repeat",
            "output_tok_per_s",
            "valid",
        ]
        return pd.DataFrame(columns=columns)
    columns = _columns(con, "cells")
    where = ["anchor IS NULL"] if "anchor" in columns else []
    # The equivalence gate's van replicates measure its noise floor, not a lever.
    where += ["replicate IS NOT TRUE"] if "replicate" in columns else []
    params: dict[str, object] = {}
    if cell_keys is not None:
        where.append("list_contains($keys, cell_key)")
        params["keys"] = sorted(cell_keys)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    query = f"SELECT * FROM cells {clause} QUALIFY {LATEST.format(key='cell_key')}"
    return con.execute(query, params).df()


def anchor_runs(con: duckdb.DuckDBPyConnection, sessions: Collection[str] | None = None) -> pd.DataFrame:
    """Latest ok attempt of each anchor cell ('start' / 'end') per session; only `sessions` when given."""
    if not has_view(con, "cells") or "anchor" not in _columns(con, "cells"):
        columns = ["session_id", "anchor", "model", "corpus", "lever", "k", "output_tok_per_s", "valid"]
        return pd.DataFrame(columns=columns)
    where, params = "anchor IS NOT NULL", {}
    if sessions is not None:
        where += " AND list_contains($sessions, session_id)"
        params["sessions"] = sorted(sessions)
    latest = LATEST.format(key="session_id, cell_key")
    return con.execute(f"SELECT * FROM cells WHERE {where} QUALIFY {latest}", params).df()


def sessions_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per session fingerprint, by start time."""
    if not has_view(con, "sessions"):
        return pd.DataFrame(columns=["session_id", "started_at", "ended_at"])
    return con.execute("SELECT * FROM sessions ORDER BY session_id").df()


def equivalence_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Output-equivalence verdicts (empty when the store has none)."""
    if not has_view(con, "equivalence"):
        return pd.DataFrame(columns=["session_id", "model", "corpus", "lever", "k", "verdict"])
    return con.execute("SELECT * FROM equivalence ORDER BY session_id, model, corpus, lever, k").df()

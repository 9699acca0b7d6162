"""Read the store into DataFrames for the analysis, through store.read.connect only.

connect's views hold only ok attempts whose files are whole; `left_out` names
the cells a table lacks because a file is damaged or their attempts failed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

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


def cell_label(row: Mapping[str, Any]) -> str:
    """A measured cell as vocab/cells.py labels it: model/lever[-kK]/corpus/rN (from its summary row)."""
    k = row.get("k")
    lever = f"{row.get('lever')}-k{int(k)}" if k is not None and not pd.isna(k) and k else row.get("lever")
    repeat = row.get("repeat")
    suffix = f"/r{int(repeat)}" if repeat is not None and not pd.isna(repeat) else ""
    return f"{row.get('model')}/{lever}/{row.get('corpus')}{suffix}"


def _scoped_attempts(
    con: duckdb.DuckDBPyConnection, cell_keys: Collection[str] | None, session_id: str | None
) -> pd.DataFrame:
    """store.read.connect's `attempts` table, only `cell_keys` and `session_id` when given."""
    frame = con.execute("SELECT * FROM attempts ORDER BY cell_key, written_at, attempt_id").df()
    if cell_keys is not None:
        frame = frame[frame["cell_key"].isin(set(cell_keys))]
    if session_id is not None:
        frame = frame[frame["session_id"] == session_id]
    return frame


def left_out(
    con: duckdb.DuckDBPyConnection,
    shown: Collection[str],
    cell_keys: Collection[str] | None = None,
    session_id: str | None = None,
) -> list[str]:
    """One line per cell with no result in a table, and why: a damaged file, or attempts that failed.

    `shown`: cell keys with a whole attempt in the table's source. A damaged
    attempt of a shown cell (another whole attempt is used) is named too. Only `cell_keys` and
    attempts of `session_id` when given.
    """
    frame = _scoped_attempts(con, cell_keys, session_id)
    lines = []
    for row in frame[frame["problem"].notna()].itertuples():
        if row.cell_key in shown:
            lines.append(f"not used: {row.problem}; another whole attempt of this cell is used")
        else:
            lines.append(f"left out: {row.problem}")
    lines += unreadable_left_out(con, cell_keys, session_id)
    measured = set(frame.loc[frame["status"] == "ok", "cell_key"])
    for key, group in frame[~frame["cell_key"].isin(measured | set(shown))].groupby("cell_key", sort=True):
        last = group.iloc[-1]
        error = last["error"].strip().splitlines() if isinstance(last["error"], str) else []
        why = f"last error: {error[0][:160]}" if error else "no error recorded"
        attempts = f"{len(group)} attempt{'s' if len(group) > 1 else ''}"
        named = f"{last['label']} (cell {key})" if isinstance(last["label"], str) else f"cell {key}"
        lines.append(f"left out: {named}: {last['status']} ({attempts}; {why})")
    return lines


def unreadable_left_out(
    con: duckdb.DuckDBPyConnection, cell_keys: Collection[str] | None = None, session_id: str | None = None
) -> list[str]:
    """`left out: <manifest>: unreadable manifest (...)` per manifest store.read.connect could not read
    (as `status` names it); only those of `cell_keys` and of attempts of `session_id` when given."""
    if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'unreadable'").fetchone()[0]:
        return []
    rows = con.execute("SELECT cell_key, attempt_id, problem FROM unreadable ORDER BY problem").fetchall()
    keys = None if cell_keys is None else set(cell_keys)
    return [
        f"left out: {problem}"
        for cell_key, attempt_id, problem in rows
        if (keys is None or cell_key in keys) and (session_id is None or attempt_id.startswith(session_id))
    ]


def invalid_left_out(measured: pd.DataFrame, what: str = "left out") -> list[str]:
    """One line per cell that analysis/repeats.py valid_only leaves out (valid not True): label, key, why."""
    if "valid" not in measured.columns:
        return []
    lines = []
    for row in measured[~measured["valid"].fillna(False).astype(bool)].to_dict("records"):
        if row["valid"] is None or pd.isna(row["valid"]):
            why = "no validity verdict recorded"
        else:
            why = f"INVALID ({row.get('invalid_reasons') or 'see invalid_reasons'})"
        lines.append(f"{what}: {cell_label(row)} (cell {row.get('cell_key')}): {why}")
    return lines

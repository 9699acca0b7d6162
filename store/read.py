"""Read the store: manifests decide what counts; DuckDB views over the Parquet files.

An ok attempt counts only when its files are whole (store/verify.py: sizes,
sha256 checksums; Parquet footers for older manifests); a damaged one is left
out of every view, named in `verified_attempts`'s problems and in the
`attempts` table of `connect` (see `damaged`).
"""

from __future__ import annotations

import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from store.atomic import finished
from store.fs import StorePath, StoreRoot
from store.layout import PROBE, REQUESTS, SUMMARY, StoreLayout
from store.verify import Damage, FileEntry, check_attempt, parse_files


@dataclass(frozen=True)
class Attempt:
    """One attempt's manifest as found in the store."""

    folder: StoreRoot
    cell_key: str
    attempt_id: str
    session_id: str
    status: str
    error: str | None
    written_at: str
    # The gates' verdict of an ok attempt; None in manifests written before it was recorded.
    valid: bool | None = None
    # The manifest's files: with size and sha256 since issue 17, names only before; None if absent.
    files: tuple[FileEntry, ...] | None = None
    # The cell's label (`tiny/suffix-k8/code_complete/r0`); None in manifests written before it was.
    label: str | None = None
    # Why the gates found an ok attempt INVALID; None if VALID or in manifests written before it was.
    invalid_reasons: str | None = None

    def damage(self, checksums: bool = True) -> Damage | None:
        """None if every file of this (ok) attempt is whole; else the first damaged one."""
        return check_attempt(
            self.cell_key, self.attempt_id, self.folder, self.files, checksums, self.session_id
        )


def attempts(root: StoreRoot, unread: list[Unreadable] | None = None) -> tuple[list[Attempt], list[str]]:
    """Every readable manifest, and a problem line for each unreadable one (skipped); each unreadable
    one is also appended to `unread` when given (its cell and attempt from its path)."""
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
                    parse_files(data.get("files")),
                    data.get("label"),
                    data.get("invalid_reasons"),
                )
            )
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"{path}: unreadable manifest ({exc}); ignored")
            if unread is not None:
                unread.append(Unreadable(path.parent.parent.name, path.parent.name, problems[-1]))
    return found, problems


@dataclass(frozen=True)
class Unreadable:
    """A manifest that could not be read (garbled JSON, a field missing): its attempt counts nowhere."""

    cell_key: str  # from its path: cells/<cell_key>/<attempt_id>/manifest.json
    attempt_id: str
    problem: str


def unreadable(attempt: Attempt, checksums: bool = True) -> str | None:
    """None if the attempt's files are whole (store/verify.py); else a line that names what is wrong."""
    damage = attempt.damage(checksums)
    return None if damage is None else str(damage)


def measured_valid(attempt: Attempt) -> bool:
    """Whether an ok attempt passed its validity gates (older manifests: its summary's `valid`)."""
    if attempt.valid is not None:
        return attempt.valid
    try:
        column = read_parquet(attempt.folder / SUMMARY, columns=["valid"]).column("valid").to_pylist()
    except (OSError, ValueError, KeyError):
        return True  # no verdict recorded: treat as measured, as before
    return bool(column and column[0])


def measured_reasons(attempt: Attempt) -> str | None:
    """Why an ok attempt was INVALID (older manifests: its summary's `invalid_reasons`)."""
    if attempt.invalid_reasons is not None:
        return attempt.invalid_reasons
    try:
        table = read_parquet(attempt.folder / SUMMARY, columns=["invalid_reasons"])
        column = table.column("invalid_reasons").to_pylist()
    except (OSError, ValueError, KeyError):
        return None
    return str(column[0]) if column and column[0] else None


@dataclass(frozen=True)
class Verified:
    """The store's ok attempts whose files are whole, and what was left out."""

    found: list[Attempt]  # every readable manifest, whatever its status
    good: list[Attempt]
    damaged: list[Damage]  # ok attempts with a damaged file, left out
    problems: list[str]  # a line per unreadable manifest and per damaged attempt
    unreadable: tuple[Unreadable, ...] = ()  # the unreadable manifests (also in problems)


# Object stores: attempts checked at once (each check is a few HEAD/GET round trips).
CHECK_THREADS = 16


def attempt_damages(found: list[Attempt], checksums: bool = True) -> dict[tuple[str, str], Damage | None]:
    """Each ok attempt's first damaged file, or None; keyed by (cell_key, attempt_id).

    On an object store the checks run in CHECK_THREADS threads; locally one after another.
    """
    ok = [a for a in found if a.status == "ok"]
    remote = any(isinstance(a.folder, StorePath) for a in ok)
    if remote and len(ok) > 1:
        with ThreadPoolExecutor(max_workers=min(CHECK_THREADS, len(ok))) as pool:
            damages = list(pool.map(lambda a: a.damage(checksums), ok))
    else:
        damages = [a.damage(checksums) for a in ok]
    return {(a.cell_key, a.attempt_id): d for a, d in zip(ok, damages, strict=True)}


def verified_attempts(root: StoreRoot, checksums: bool = True) -> Verified:
    """Ok attempts whose files are whole (sizes, and sha256 unless `checksums=False`)."""
    unread: list[Unreadable] = []
    found, problems = attempts(root, unread)
    good, damaged = [], []
    damage_of = attempt_damages(found, checksums)
    for attempt in found:
        if attempt.status != "ok":
            continue
        if (damage := damage_of[(attempt.cell_key, attempt.attempt_id)]) is not None:
            damaged.append(damage)
            problems.append(str(damage))
        else:
            good.append(attempt)
    return Verified(found, good, damaged, problems, tuple(unread))


def ok_attempts(root: StoreRoot, checksums: bool = True) -> tuple[list[Attempt], list[str]]:
    """Attempts whose manifest says ok and whose files are whole, and a line per problem."""
    verified = verified_attempts(root, checksums)
    return verified.good, verified.problems


def ok_files(root: StoreRoot, name: str) -> list[str]:
    """Paths of `name` (requests/summary Parquet) from whole ok attempts."""
    good, _ = ok_attempts(root)
    return [str(a.folder / name) for a in good]


def read_parquet(path: StoreRoot, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file of the store, local or through pyarrow's filesystem (store/fs.py)."""
    if isinstance(path, StorePath):
        return pq.read_table(path.store.full(path.key), columns=columns, filesystem=path.store.fs)
    return pq.read_table(path, columns=columns)


def _sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def _create_view(con: duckdb.DuckDBPyConnection, view: str, reader: str, paths: list[str]) -> None:
    """CREATE VIEW over `paths` with `reader`; none when there are no files (the view is then absent).

    union_by_name: files written by older harness versions lack newer columns,
    which read as NULL; see docs/store.md.
    """
    if paths:
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM {reader}({_sql_list(paths)}, union_by_name=true)")


def _create_arrow_view(con: duckdb.DuckDBPyConnection, view: str, paths: list[StorePath]) -> None:
    """CREATE VIEW over Parquet objects read through pyarrow (no DuckDB httpfs: it is fetched at run
    time, so offline it is not there); columns united by name as read_parquet's union_by_name does."""
    if not paths:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(paths))) as pool:
        tables = list(pool.map(read_parquet, paths))
    table = pa.concat_tables(tables, promote_options="permissive")
    con.register(f"_{view}_arrow", table)
    con.execute(f"CREATE VIEW {view} AS SELECT * FROM _{view}_arrow")


def _create_json_view(con: duckdb.DuckDBPyConnection, view: str, paths: list[StorePath]) -> None:
    """CREATE VIEW over JSON objects: copied to local files, read as local ones are (read_json_auto)."""
    if not paths:
        return
    with tempfile.TemporaryDirectory(prefix="lever-grid-json-") as folder:
        local = []
        for index, path in enumerate(paths):
            copy = Path(folder) / f"{index:06d}-{path.name}"
            copy.write_bytes(path.read_bytes())
            local.append(str(copy))
        reader = f"read_json_auto({_sql_list(local)}, union_by_name=true)"
        con.execute(f"CREATE TABLE _{view}_json AS SELECT * FROM {reader}")  # read before the copies go
    con.execute(f"CREATE VIEW {view} AS SELECT * FROM _{view}_json")


ATTEMPT_COLUMNS = [
    "cell_key",
    "label",  # NULL in manifests written before labels were recorded
    "attempt_id",
    "session_id",
    "status",
    "error",
    "written_at",
    "file",  # the damaged file of an ok attempt left out, else NULL
    "problem",  # what is wrong with it, in words, else NULL
]


# Table `unreadable`: one row per manifest that could not be read (its attempt is in no view).
UNREADABLE_COLUMNS = ["cell_key", "attempt_id", "problem"]


def _attempts_table(con: duckdb.DuckDBPyConnection, verified: Verified) -> None:
    """Table `attempts`: one row per readable manifest, damaged ok attempts with their file and problem."""
    damage = {(d.cell_key, d.attempt_id): d for d in verified.damaged}
    rows = []
    for a in verified.found:
        d = damage.get((a.cell_key, a.attempt_id))
        rows.append(
            {"cell_key": a.cell_key, "label": a.label, "attempt_id": a.attempt_id, "session_id": a.session_id,
             "status": a.status, "error": a.error, "written_at": a.written_at,
             "file": str(d.path) if d else None, "problem": str(d) if d else None}
        )  # fmt: skip
    schema = pa.schema([(name, pa.string()) for name in ATTEMPT_COLUMNS])
    con.from_arrow(pa.Table.from_pylist(rows, schema=schema)).create("attempts")
    unread = [
        {"cell_key": u.cell_key, "attempt_id": u.attempt_id, "problem": u.problem}
        for u in verified.unreadable
    ]
    schema = pa.schema([(name, pa.string()) for name in UNREADABLE_COLUMNS])
    con.from_arrow(pa.Table.from_pylist(unread, schema=schema)).create("unreadable")


def connect(root: StoreRoot, checksums: bool = True) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per kind of record in the store.

    requests     per-request rows of ok attempts
    cells        one summary row per ok attempt (anchor runs included: column `anchor`)
    sessions     one row per session fingerprint (<root>/sessions/*.json)
    probes       top-k prompt logprobs of ok attempts that ran the probe (workers/load/probe.py)
    equivalence  output-equivalence verdicts (<root>/equivalence/*.parquet), when any exist

    A view exists only when it has at least one file; `has_view` says which do.
    Only ok attempts whose files are whole are in the views (sizes and sha256
    checksums as their manifests recorded them; `checksums=False`: sizes only).
    The table `attempts` (always present, ATTEMPT_COLUMNS) has every manifest,
    and names the damaged file of each ok attempt left out (`damaged`); the table
    `unreadable` (always present, UNREADABLE_COLUMNS) each manifest that could not be read.
    Notebooks, the report and `python -m grid summary` all read through here.
    """
    con = duckdb.connect()
    layout = StoreLayout(root)
    verified = verified_attempts(root, checksums)
    good = verified.good
    _attempts_table(con, verified)
    if isinstance(root, StorePath):  # an object store: Parquet through pyarrow, Arrow tables to DuckDB
        for view, name in (("requests", REQUESTS), ("cells", SUMMARY)):
            _create_arrow_view(con, view, [a.folder / name for a in good])
        _create_arrow_view(con, "probes", [a.folder / PROBE for a in good if (a.folder / PROBE).exists()])
        _create_json_view(con, "sessions", sorted(finished(layout.sessions_dir().glob("*.json"))))
        _create_arrow_view(con, "equivalence", sorted(finished(layout.equivalence_dir().glob("*.parquet"))))
        return con
    for view, name in (("requests", REQUESTS), ("cells", SUMMARY)):
        _create_view(con, view, "read_parquet", [str(a.folder / name) for a in good])
    probes = [str(a.folder / PROBE) for a in good if (a.folder / PROBE).exists()]
    _create_view(con, "probes", "read_parquet", probes)
    sessions = sorted(str(p) for p in finished(layout.sessions_dir().glob("*.json")))
    _create_view(con, "sessions", "read_json_auto", sessions)
    verdicts = sorted(str(p) for p in finished(layout.equivalence_dir().glob("*.parquet")))
    _create_view(con, "equivalence", "read_parquet", verdicts)
    return con


def damaged(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every ok attempt `connect` left out because a file is damaged: cell_key, attempt_id,
    session_id, file, problem (a line that names them all)."""
    query = """SELECT cell_key, attempt_id, session_id, file, problem FROM attempts
               WHERE problem IS NOT NULL ORDER BY cell_key, attempt_id"""
    return con.execute(query).df()


def has_view(con: duckdb.DuckDBPyConnection, view: str) -> bool:
    """Whether `connect` created `view` (it does not when the store has no such files)."""
    query = "SELECT count(*) FROM duckdb_views() WHERE view_name = $view AND NOT internal"
    return bool(con.execute(query, {"view": view}).fetchone()[0])

"""Before a resume: did the done cells measure the corpora that the pending cells would send?

Pairing by (session, repeat) and resume both assume that one cell key and seed
draw the same prompts whenever they run. A corpus rebuilt with other bytes
(another pin, builder or cap, a hand edit) breaks that silently, so a run whose
corpus hash differs from the one its grid's done cells recorded stops before
any launch, one line per corpus. Cells stored before corpus hashes were
recorded (no `corpus_sha256`) are checked by their `measured_prompt_hashes`
against the schedule this run's copy gives them; a cell with neither is not
checked.

Asking for a new study on the changed corpus: a new store (paths.store=...),
or run.mode=all, which measures every cell of the grid again on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from analysis.load import LATEST
from grid.checks.prompt_audit import CorpusKey, CorpusRead, corpus_key
from store.fs import StoreRoot
from store.read import connect, has_view
from vocab.cells import Cell
from workers.load.prompts import SHOWN_HASH_CHARS, cell_schedule

NEW_STUDY = (
    "or start a new study on this copy: a new store (paths.store=<new folder or URL>) or run.mode=all "
    "(every cell of the grid measured again on it)"
)


@dataclass(frozen=True)
class DoneRow:
    """What the latest ok attempt of a done cell recorded about its corpus."""

    session_id: str
    corpus_sha256: str | None
    measured_prompt_hashes: str | None


@dataclass
class Mismatch:
    """The done cells of one corpus that measured other bytes than this run would read."""

    corpus: str
    recorded: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)
    cells: int = 0
    # Of them, cells without a recorded hash whose measured prompts differ from this copy's schedule.
    by_prompts: int = 0


def done_rows(root: StoreRoot, keys: Iterable[str]) -> dict[str, DoneRow]:
    """cell key -> its latest ok attempt's corpus hash and measured prompts, for the given keys."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    con = connect(root, checksums=False)
    if not has_view(con, "cells"):
        return {}
    columns = {row[0] for row in con.execute("DESCRIBE cells").fetchall()}
    picked = [
        name if name in columns else f"NULL AS {name}" for name in ("corpus_sha256", "measured_prompt_hashes")
    ]
    rows = con.execute(
        f"""SELECT cell_key, session_id, {", ".join(picked)} FROM cells
            WHERE list_contains($keys, cell_key)
            QUALIFY {LATEST.format(key="cell_key")}""",
        {"keys": wanted},
    ).fetchall()
    return {key: DoneRow(session, sha, measured) for key, session, sha, measured in rows}


def resume_problems(
    root: StoreRoot,
    kept: list[Cell],
    planned: dict[str, str],
    reads: dict[CorpusKey, CorpusRead],
) -> list[str]:
    """One line per corpus whose done cells (`kept`, not run again) measured other bytes than `planned`."""
    kept = [cell for cell in kept if cell.corpus.name in planned]
    rows = done_rows(root, (cell.key for cell in kept))
    found: dict[str, Mismatch] = {}
    for cell in kept:
        row = rows.get(cell.key)
        if row is None:
            continue
        name = cell.corpus.name
        if row.corpus_sha256:
            if row.corpus_sha256 == planned[name]:
                continue
            mismatch = found.setdefault(name, Mismatch(name))
            mismatch.recorded.add(row.corpus_sha256)
        elif row.measured_prompt_hashes and (read := reads.get(corpus_key(cell.corpus))) and read.corpus:
            schedule = cell_schedule(cell, read.corpus, allow_repeats=True)
            if json.loads(row.measured_prompt_hashes) == [p.content_hash for p in schedule.measured]:
                continue
            mismatch = found.setdefault(name, Mismatch(name))
            mismatch.by_prompts += 1
        else:
            continue
        mismatch.cells += 1
        mismatch.sessions.add(row.session_id)
    return [problem_line(m, planned[m.corpus], reads, kept) for m in found.values()]


def problem_line(
    mismatch: Mismatch, planned: str, reads: dict[CorpusKey, CorpusRead], kept: list[Cell]
) -> str:
    spec = next(cell.corpus for cell in kept if cell.corpus.name == mismatch.corpus)
    read = reads.get(corpus_key(spec))
    where = f" from {read.path}" if read is not None else ""
    recorded = ", ".join(sorted(h[:SHOWN_HASH_CHARS] for h in mismatch.recorded))
    what = []
    if mismatch.recorded:
        what.append(f"sha256 {recorded}")
    if mismatch.by_prompts:
        what.append(
            f"other measured prompts than this copy gives ({mismatch.by_prompts} cells stored before hashes)"
        )
    sessions = ", ".join(sorted(mismatch.sessions))
    return (
        f"corpus '{mismatch.corpus}': {mismatch.cells} done cell{'s' if mismatch.cells != 1 else ''} of this "
        f"grid measured {' and '.join(what)} "
        f"(sessions {sessions}), this run reads sha256 {planned[:SHOWN_HASH_CHARS]}{where}; its pending "
        "cells would not measure what the done ones did under the same keys and seeds. Restore the corpus "
        "they measured (build it from their commit and pins: `python -m assets` with the run's overrides), "
        + NEW_STUDY
    )

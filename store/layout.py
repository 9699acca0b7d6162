"""Where things live in the results store (a local folder, or a URL such as s3://bucket/prefix: store/fs.py).

  <root>/cells/<cell_key>/<attempt_id>/requests.parquet   per-request rows
  <root>/cells/<cell_key>/<attempt_id>/summary.parquet    one row: the cell's figures
  <root>/cells/<cell_key>/<attempt_id>/probe.parquet      top-k logprobs, if probed (workers/load/probe.py)
  <root>/cells/<cell_key>/<attempt_id>/manifest.json      written last: status ok|failed
  <root>/sessions/<session_id>.json                      environment fingerprint
  <root>/logs/<session_id>/<engine_key>.log              engine logs
  <root>/equivalence/<session_id>.parquet                output-equivalence verdicts
  <root>/reports/<experiment>.html                       `python -m grid report`
  <root>/confirmations/<experiment>.json                 what `python -m grid confirm` measures

An attempt counts only once its manifest says `ok`; files without one are
leftovers of an interrupted write and are ignored.

Every user string that becomes one path component here (`name`, `session_id`; the model, lever and
corpus names that name spec files, grid/config/compose.py) passes one rule, component_problem: a
single plain file name, so that nothing is written outside the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from store.errors import StoreError
from store.fs import StoreRoot

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
REQUESTS = "requests.parquet"
SUMMARY = "summary.parquet"
PROBE = "probe.parquet"
# A component's longest: a file system's name limit is 255 bytes, less a suffix and a temp prefix.
MAX_COMPONENT_CHARS = 200
# Besides letters and digits: nothing a shell, a URL or a path reads as syntax.
COMPONENT_PUNCTUATION = "._-+=@,"
COMPONENT_RULE = (
    f"a name is letters, digits and {' '.join(COMPONENT_PUNCTUATION)} ({MAX_COMPONENT_CHARS} at most, "
    "not starting with . or -), e.g. smoke"
)


def component_problem(key: str, value: str) -> str | None:
    """Why `value`, given as `key`, cannot be one file name inside the store, or None: one line
    naming the key, the value (quoted, its odd characters escaped) and the rule (component_flaw)."""
    flaw = component_flaw(value)
    return None if flaw is None else f"{key} {str(value)!r} {flaw}; {COMPONENT_RULE}"


def component_flaw(value: str) -> str | None:
    """What keeps `value` from being one plain name ("starts with '.'"), or None.

    Refused: empty, `.`/`..`, a separator (/ or \\), a leading `.` (hidden, and the atomic writes'
    temp files) or `-` (an option to any tool), and any character other than a letter, a digit or
    COMPONENT_PUNCTUATION: controls, NUL, undecodable bytes, spaces.
    """
    text = str(value)
    if not text:
        why = "is empty"
    elif text in (".", "..") or "/" in text or "\\" in text:
        why = "is a path, not a name: it would be written outside its folder"
    elif len(text) > MAX_COMPONENT_CHARS:
        why = f"is {len(text)} characters long"
    elif text[0] in ".-":
        why = f"starts with '{text[0]}'"
    elif odd := [c for c in text if not (c.isalnum() or c in COMPONENT_PUNCTUATION)]:
        why = f"holds {odd[0]!a}"
    else:
        return None
    return why


def component(key: str, value: str) -> str:
    """`value` if it is one plain name (component_problem), else StoreError: the last guard before a
    path is joined (grid/config/compose.py refuses the same names before anything starts)."""
    if (problem := component_problem(key, value)) is not None:
        raise StoreError(problem)
    return value


@dataclass(frozen=True)
class StoreLayout:
    root: StoreRoot  # a local Path or a store/fs.py StorePath: both take `/`, glob, read_text

    def cell_dir(self, cell_key: str) -> StoreRoot:
        return self.root / "cells" / cell_key

    def attempt_dir(self, cell_key: str, attempt_id: str) -> StoreRoot:
        return self.cell_dir(cell_key) / attempt_id

    def session_file(self, session_id: str) -> StoreRoot:
        return self.sessions_dir() / f"{component('session_id', session_id)}.json"

    def sessions_dir(self) -> StoreRoot:
        return self.root / "sessions"

    def equivalence_dir(self) -> StoreRoot:
        return self.root / "equivalence"

    def equivalence_file(self, session_id: str) -> StoreRoot:
        return self.equivalence_dir() / f"{component('session_id', session_id)}.parquet"

    def reports_dir(self) -> StoreRoot:
        return self.root / "reports"

    def report_file(self, experiment: str) -> StoreRoot:
        return self.reports_dir() / f"{component('name', experiment)}.html"

    def confirmations_dir(self) -> StoreRoot:
        return self.root / "confirmations"

    def confirmation_file(self, experiment: str) -> StoreRoot:
        return self.confirmations_dir() / f"{component('name', experiment)}.json"

    def logs_dir(self, session_id: str) -> StoreRoot:
        return self.root / "logs" / component("session_id", session_id)

    def engine_log(self, session_id: str, engine_key: str) -> StoreRoot:
        return self.logs_dir(session_id) / f"{component('engine key', engine_key)}.log"

    def manifests(self) -> list[StoreRoot]:
        return sorted((self.root / "cells").glob(f"*/*/{MANIFEST}"))

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
"""

from __future__ import annotations

from dataclasses import dataclass

from store.fs import StoreRoot

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
REQUESTS = "requests.parquet"
SUMMARY = "summary.parquet"
PROBE = "probe.parquet"


@dataclass(frozen=True)
class StoreLayout:
    root: StoreRoot  # a local Path or a store/fs.py StorePath: both take `/`, glob, read_text

    def cell_dir(self, cell_key: str) -> StoreRoot:
        return self.root / "cells" / cell_key

    def attempt_dir(self, cell_key: str, attempt_id: str) -> StoreRoot:
        return self.cell_dir(cell_key) / attempt_id

    def session_file(self, session_id: str) -> StoreRoot:
        return self.sessions_dir() / f"{session_id}.json"

    def sessions_dir(self) -> StoreRoot:
        return self.root / "sessions"

    def equivalence_dir(self) -> StoreRoot:
        return self.root / "equivalence"

    def equivalence_file(self, session_id: str) -> StoreRoot:
        return self.equivalence_dir() / f"{session_id}.parquet"

    def reports_dir(self) -> StoreRoot:
        return self.root / "reports"

    def report_file(self, experiment: str) -> StoreRoot:
        return self.reports_dir() / f"{experiment}.html"

    def confirmations_dir(self) -> StoreRoot:
        return self.root / "confirmations"

    def confirmation_file(self, experiment: str) -> StoreRoot:
        return self.confirmations_dir() / f"{experiment}.json"

    def logs_dir(self, session_id: str) -> StoreRoot:
        return self.root / "logs" / session_id

    def engine_log(self, session_id: str, engine_key: str) -> StoreRoot:
        return self.logs_dir(session_id) / f"{engine_key}.log"

    def manifests(self) -> list[StoreRoot]:
        return sorted((self.root / "cells").glob(f"*/*/{MANIFEST}"))

"""Which engines run on this node, for whom, and how to end every process of one.

Each engine the harness starts is recorded in a small JSON file,
`<store>/engines/<hostname>/<pgid>.json`, written when it starts (and again
once it is ready, with the processes vLLM spawned) and removed when it is
stopped. A record whose owner (the process that started the engine: a Ray
actor, or a test) is gone belongs to an engine nobody will stop: `sweep` ends
such engines at the start of the next worker on that node.

A process is ended only when it is provably the engine's: the marker
LEVER_GRID_ENGINE_ID=<engine id> in its environment, or the same pid, start
time and command line as recorded. A pid the kernel has since given to
another process matches neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

ENGINE_ID_ENV = "LEVER_GRID_ENGINE_ID"
# Start times read twice from /proc may differ by a clock tick.
START_TIME_SLACK_S = 0.05


@dataclass(frozen=True)
class ProcessId:
    """One process, as it can be told apart from a later one with the same pid."""

    pid: int
    create_time: float
    cmdline: list[str]

    @classmethod
    def of(cls, proc: psutil.Process) -> ProcessId:
        return cls(proc.pid, proc.create_time(), proc.cmdline())

    def find(self, same_cmdline: bool = True) -> psutil.Process | None:
        """The live process this was, or None if it is gone (or its pid went to another).

        `same_cmdline=False` for a process that retitles itself (a Ray worker
        shows the task it runs): pid and start time still tell it apart.
        """
        try:
            proc = psutil.Process(self.pid)
            same = abs(proc.create_time() - self.create_time) < START_TIME_SLACK_S
            if same and (not same_cmdline or proc.cmdline() == self.cmdline):
                return proc if proc.status() != psutil.STATUS_ZOMBIE else None
        except psutil.Error:
            pass
        return None


@dataclass(frozen=True)
class EngineRecord:
    engine_id: str
    pgid: int  # the engine's root process (vllm serve) leads its own session and group
    root: ProcessId
    owner: ProcessId  # the process that started the engine and stops it
    log_path: str = ""
    children: list[ProcessId] = field(default_factory=list)
    guard: ProcessId | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> EngineRecord:
        raw: dict[str, Any] = json.loads(text)
        guard = raw.get("guard")
        return cls(
            engine_id=raw["engine_id"],
            pgid=int(raw["pgid"]),
            root=ProcessId(**raw["root"]),
            owner=ProcessId(**raw["owner"]),
            log_path=raw.get("log_path", ""),
            children=[ProcessId(**c) for c in raw.get("children", [])],
            guard=ProcessId(**guard) if guard else None,
        )


def node_dir(store_root: Path) -> Path:
    """Where this node's engines are recorded in the store."""
    return store_root / "engines" / socket.gethostname()


def record_path(directory: Path, pgid: int) -> Path:
    return directory / f"{pgid}.json"


def write(directory: Path, record: EngineRecord) -> Path | None:
    """Write (or rewrite) the record atomically; None when the store cannot take it.

    An unwritable store must not stop an engine from running: it only loses
    the sweep for this engine.
    """
    path = record_path(directory, record.pgid)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(record.to_json())
        tmp.replace(path)
    except OSError:
        return None
    return path


def remove(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def read_all(directory: Path) -> list[tuple[Path, EngineRecord | None]]:
    """Every record in `directory`; None for one that cannot be read."""
    found: list[tuple[Path, EngineRecord | None]] = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            found.append((path, EngineRecord.from_json(path.read_text())))
        except (OSError, ValueError, KeyError, TypeError):
            found.append((path, None))
    return found


def carries_marker(proc: psutil.Process, engine_id: str) -> bool:
    try:
        return proc.environ().get(ENGINE_ID_ENV) == engine_id
    except psutil.Error:
        return False


def engine_processes(record: EngineRecord) -> list[psutil.Process]:
    """The live processes of this engine: marked with its id, or recorded and unchanged."""
    found: dict[int, psutil.Process] = {}
    for known in [record.root, *record.children]:
        if (proc := known.find()) is not None:
            found[proc.pid] = proc
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == me:
            continue
        with contextlib.suppress(psutil.Error):
            # Only processes started after the engine can belong to it.
            if proc.create_time() + START_TIME_SLACK_S < record.root.create_time:
                continue
            if proc.status() != psutil.STATUS_ZOMBIE and carries_marker(proc, record.engine_id):
                found[proc.pid] = proc
    return list(found.values())


def kill(procs: list[psutil.Process], timeout_s: float) -> list[int]:
    """SIGTERM, then SIGKILL what is left after `timeout_s`; return the pids still alive."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
        _, procs = psutil.wait_procs(procs, timeout=timeout_s)
        procs = [p for p in procs if _alive(p)]
        if not procs:
            break
    return [p.pid for p in procs]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def owner_alive(record: EngineRecord) -> bool:
    return record.owner.find(same_cmdline=False) is not None


def end_engine(record: EngineRecord, timeout_s: float) -> list[int]:
    """End every process of the engine and its guard; return the pids it ended."""
    procs = engine_processes(record)
    # The guard, unless it is the one ending the engine.
    if record.guard is not None and record.guard.pid != os.getpid() and (guard := record.guard.find()):
        procs.append(guard)
    pids = [p.pid for p in procs]
    kill(procs, timeout_s)
    return pids


def sweep(directory: Path, timeout_s: float = 5.0) -> list[str]:
    """End the engines recorded here whose owner is gone; one line per engine ended.

    Engines whose owner still runs (another worker's, on this node) are left
    alone; records of engines already gone are removed.
    """
    lines = []
    for path, record in read_all(directory):
        if record is None:
            continue
        if owner_alive(record):
            continue
        if pids := end_engine(record, timeout_s):
            lines.append(
                f"ended engine {record.engine_id} (pgid {record.pgid}, owner {record.owner.pid} gone): "
                f"pids {', '.join(map(str, sorted(pids)))}; log {record.log_path}"
            )
        remove(path)
    return lines

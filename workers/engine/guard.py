"""One watchdog per engine: when the process that started the engine dies, end the engine.

`vllm serve` is a child of a Ray actor. When the actor dies without running
its teardown (SIGKILL, `ray.kill`, its raylet or driver gone, the OOM killer),
Ray SIGKILLs the actor's direct children, so the API server dies, but vLLM's
EngineCore and workers live on under PID 1. The guard is started by the
engine's owner and detaches (double fork), so it is nobody's direct child and
outlives the owner; every 0.5 s it checks the owner (same pid, same start
time, not a zombie), and once the owner is gone it ends every process of the
engine (workers/engine/registry.py: marked with the engine's id or recorded
and unchanged), removes the engine's record and exits. It also exits, doing
nothing, once the engine is gone (it was stopped normally).

This covers any engine command (no vLLM plugin needed) and every way the owner
can die; the `lifetime` plugin (lever_plugins/lifetime.py) makes vLLM's own
processes follow faster, and the sweep at the next worker start covers a guard
that was itself killed.

    python -m workers.engine.guard [<record path>]  < record.json
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from workers.engine.registry import EngineRecord, end_engine, engine_processes, owner_alive, remove

POLL_S = 0.5
KILL_TIMEOUT_S = 5.0


def engine_gone(record: EngineRecord) -> bool:
    """The engine's root and group are gone and nothing carries its id."""
    if record.root.find() is not None:
        return False
    try:
        os.killpg(record.pgid, 0)
    except ProcessLookupError:
        return not engine_processes(record)
    except PermissionError:
        pass
    return False


def latest(record: EngineRecord, path: Path | None) -> EngineRecord:
    """The record as last written (with the processes vLLM spawned), else as given."""
    if path is None:
        return record
    try:
        return EngineRecord.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return record


def watch(record: EngineRecord, path: Path | None) -> None:
    while True:
        if not owner_alive(record):
            end_engine(latest(record, path), KILL_TIMEOUT_S)
            remove(path)
            return
        if engine_gone(record):
            # Stopped by its owner (who removes the record), or it died with the owner.
            if not owner_alive(record):
                remove(path)
            return
        time.sleep(POLL_S)


def detach() -> None:
    """Fork; the parent prints the child's pid and exits, so the child has no parent to die with."""
    pid = os.fork()
    if pid:
        print(pid, flush=True)
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def main(argv: list[str]) -> int:
    record = EngineRecord.from_json(sys.stdin.read())
    path = Path(argv[0]) if argv and argv[0] else None
    detach()
    with contextlib.suppress(Exception):
        watch(record, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

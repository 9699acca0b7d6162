"""What a running engine is made of, which of its processes are gone, and what the server's errors say.

A cell is a measurement of a whole, healthy engine. The API server is only the
root of it: under it run vLLM's EngineCore and, with the mp backend, its workers
(one per TP rank). When one of those dies the API server may live on and answer
every request with HTTP 500 (seen with `kill -9` of EngineCore: 0 of 24 requests
ok, recorded as an INVALID measurement), so the engine is checked as the tree
it was when it became ready, not as its root alone.

Engine processes are named by the title vLLM gives them (`VLLM::EngineCore`,
`VLLM::Worker_TP1`, ...) or, where setproctitle left it unset (seen in CI: the
command line stays `python -c from multiprocessing.spawn import spawn_main...`),
by where they sit: the API server's spawned child is its EngineCore, one below
it a worker. Other descendants (multiprocessing's resource tracker, compiler
helpers) are not the engine, and their ending is not its death.

Pure functions only: workers/engine/process.py reads the processes, workers/runner.py
turns what is found here into a cell's failure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

API_SERVER = "API server"
TITLE_PREFIX = "VLLM::"
SPAWNED = "multiprocessing.spawn import spawn_main"
# How much of a server's error message a cell's error quotes.
REASON_CHARS = 300


@dataclass(frozen=True)
class EngineProcess:
    """One process of a running engine: its role, pid and depth below the API server (0)."""

    role: str
    pid: int
    depth: int

    def __str__(self) -> str:
        return f"{self.role} (pid {self.pid})"


def process_role(cmdline: Sequence[str], name: str, depth: int) -> str | None:
    """`API server`, `EngineCore`, `Worker_TP0`, `worker`...; None for a process that is not the engine.

    `cmdline` and `name` as psutil reads them (/proc/<pid>/cmdline and comm),
    `depth` 0 for the API server, 1 for its children, and so on.
    """
    if depth == 0:
        return API_SERVER
    line = " ".join(cmdline)
    for text in (line, name):
        if text.startswith(TITLE_PREFIX) and (title := text[len(TITLE_PREFIX) :].split()):
            return title[0]
    if SPAWNED in line:
        return "EngineCore" if depth == 1 else "worker"
    return None


def names(processes: Sequence[EngineProcess]) -> str:
    """`EngineCore (pid 12)`, `EngineCore (pid 12) and Worker_TP0 (pid 14)`, ... (API server first)."""
    ordered = [str(p) for p in sorted(processes, key=lambda p: (p.depth, p.pid))]
    if len(ordered) <= 1:
        return "".join(ordered)
    return ", ".join(ordered[:-1]) + " and " + ordered[-1]


def death_line(lost: Sequence[EngineProcess], root: EngineProcess, stage: str, root_exit: str | None) -> str:
    """The first part of a dead engine's error: what is gone and in which stage.

    `engine exited (signal 9) during the measured load: API server (pid 10) gone`;
    `engine died during the measured load: EngineCore (pid 12) gone, API server (pid 10) still up`.
    `root_exit` describes how the API server ended (`signal 9`), when it did.
    """
    gone = names(lost) or str(root)
    if any(p.depth == 0 for p in lost) or not lost:
        how = f" ({root_exit})" if root_exit else ""
        return f"engine exited{how} during the {stage}: {gone} gone"
    return f"engine died during the {stage}: {gone} gone, {root} still up"


@dataclass(frozen=True)
class HttpErrors:
    """Requests that the server answered with an HTTP error of one class (4xx or 5xx)."""

    status: int  # the first such request's status
    count: int
    total: int
    reason: str  # the first such response's message

    def share(self) -> str:
        return f"{self.count} of {self.total} requests"


def server_reason(body: str) -> str:
    """An error response's message: vLLM's `{"error": {"message": ...}}`, FastAPI's `detail`, or the text."""
    text = body.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        inner = data.get("error")
        for found in (
            inner.get("message") if isinstance(inner, dict) else inner,
            data.get("message"),
            data.get("detail"),
        ):
            if found:
                text = found if isinstance(found, str) else json.dumps(found)
                break
    text = " ".join(text.split())
    return (text[:REASON_CHARS] + "...") if len(text) > REASON_CHARS else (text or "(no message)")


def http_errors(statuses: Sequence[int | None], bodies: Sequence[str | None], low: int) -> HttpErrors | None:
    """The requests whose status lies in [low, low + 100): 400 for rejections, 500 for server errors."""
    hits = [i for i, s in enumerate(statuses) if s is not None and low <= s < low + 100]
    if not hits:
        return None
    first = hits[0]
    return HttpErrors(int(statuses[first] or 0), len(hits), len(statuses), server_reason(bodies[first] or ""))


def rejected_line(errors: HttpErrors, stage: str) -> str:
    """A 4xx answer is the cell's configuration, not the engine's speed: the server's own reason."""
    return (
        f"the server rejected {errors.share()} of the {stage} with HTTP {errors.status} "
        f"(a configuration error, not a measurement): {errors.reason}"
    )


def server_error_line(errors: HttpErrors, stage: str) -> str:
    """`the server answered HTTP 500 to 16 of 24 requests of the measured load: ...`."""
    return f"the server answered HTTP {errors.status} to {errors.share()} of the {stage}: {errors.reason}"

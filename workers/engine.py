"""`vllm serve` as a child process: start, wait until ready, stop the whole tree.

The server runs in its own session (process group) so teardown can kill every
process it spawned (API server, engine core, workers) even if the parent died.
Readiness is /health answering 200: the socket opens before the model is loaded.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from types import TracebackType

import psutil

from grid.errors import EngineError
from workers.engine_args import Endpoint

POLL_INTERVAL_S = 0.5
PR_SET_PDEATHSIG = 1  # linux/prctl.h
LOG_TAIL_LINES = 40


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the parent (the Ray actor) dies.

    The engine runs in its own session, so a SIGKILLed actor would otherwise
    leave it running; vLLM's own processes follow their API server down.
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port the OS reports free right now on `host`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def new_endpoint(host: str = "127.0.0.1") -> Endpoint:
    return Endpoint(host=host, port=free_port(host), api_key=secrets.token_hex(16))


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Last `lines` lines of a log file ('' when it does not exist)."""
    if not path.exists():
        return ""
    with path.open("r", errors="replace") as handle:
        return "".join(deque(handle, maxlen=lines))


def kill_tree(root_pid: int, pgid: int | None, timeout_s: float) -> list[int]:
    """SIGTERM then SIGKILL the process group and every descendant; return survivors' pids."""
    try:
        procs = [psutil.Process(root_pid), *psutil.Process(root_pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(sig)
        _, procs = psutil.wait_procs(procs, timeout=timeout_s)
        if not procs:
            break
    return [p.pid for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


class Engine:
    """One running `vllm serve`; use as a context manager so it is always stopped."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        endpoint: Endpoint,
        log_path: Path,
        start_timeout_s: float,
        stop_timeout_s: float = 30.0,
    ) -> None:
        self.argv = argv
        self.env = env
        self.endpoint = endpoint
        self.log_path = log_path
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.pids_seen: set[int] = set()
        self.ready_s: float | None = None

    def start(self) -> float:
        """Launch and block until /health answers; return seconds to ready."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        start_ns = time.perf_counter_ns()
        with self.log_path.open("wb") as log:
            log.write(("$ " + " ".join(self.argv) + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        try:
            self._wait_ready(start_ns)
        except BaseException:
            self.stop()
            raise
        self.ready_s = (time.perf_counter_ns() - start_ns) / 1e9
        return self.ready_s

    def _wait_ready(self, start_ns: int) -> None:
        assert self.proc is not None
        deadline_ns = start_ns + int(self.start_timeout_s * 1e9)
        while True:
            self._remember_children()
            if (code := self.proc.poll()) is not None:
                raise EngineError(
                    f"engine exited with code {code} before it was ready; "
                    f"see {self.log_path}. Log tail:\n{log_tail(self.log_path)}"
                )
            if self.healthy():
                return
            if time.perf_counter_ns() > deadline_ns:
                raise EngineError(
                    f"engine not ready after {self.start_timeout_s:.0f} s "
                    f"(raise engine.start_timeout_s if it is only slow); see {self.log_path}. "
                    f"Log tail:\n{log_tail(self.log_path)}"
                )
            time.sleep(POLL_INTERVAL_S)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint.base_url + "/health", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _remember_children(self) -> None:
        """Track descendants while the root lives, so orphans can still be found later."""
        if self.proc is None:
            return
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(self.proc.pid)
            self.pids_seen.update(c.pid for c in root.children(recursive=True))

    def stop(self) -> None:
        """Kill the whole process tree; raise EngineError if anything survives."""
        if self.proc is None:
            return
        self._remember_children()
        survivors = kill_tree(self.proc.pid, self.proc.pid, self.stop_timeout_s)
        for pid in self.pids_seen:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc = psutil.Process(pid)
                proc.kill()
                proc.wait(timeout=self.stop_timeout_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=self.stop_timeout_s)
        if survivors:
            raise EngineError(f"engine processes survived teardown: {survivors}")

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

"""`vllm serve` as a child process: start, wait until ready, stop the whole tree.

The server runs in its own session (process group) so teardown can kill every
process it spawned (API server, engine core, workers) even if the parent died.
Readiness is /health answering 200: the socket opens before the model is loaded.

No engine outlives the process that started it (issue 17), by three means:
- the API server gets PR_SET_PDEATHSIG(SIGTERM) before exec, and every vLLM
  process below it PR_SET_PDEATHSIG(SIGKILL) from the `lifetime` plugin
  (lever_plugins/lifetime.py, switched on by LEVER_DIE_WITH_PARENT=1 here):
  each process dies with its parent, in whatever way the parent died;
- a guard per engine (workers/engine/guard.py), detached so that it outlives
  the owner, ends the engine's processes once the owner is gone: any engine
  command, with or without the plugin;
- a record per engine (workers/engine/registry.py) that the next worker on the
  node sweeps if the owner and the guard are both gone.
Every engine process carries LEVER_GRID_ENGINE_ID=<its id> in its environment
(SPT_NOENV=1 keeps vLLM's process titles from overwriting it), so it can be
told apart from any other process.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
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
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import psutil

from lever_plugins.lifetime import ENV_FLAG as DIE_WITH_PARENT_ENV
from vocab.errors import EngineError
from workers.engine import registry
from workers.engine.args import Endpoint
from workers.engine.registry import ENGINE_ID_ENV, EngineRecord, ProcessId
from workers.engine.tree import API_SERVER, EngineProcess, process_role

POLL_INTERVAL_S = 0.5
PR_SET_PDEATHSIG = 1  # linux/prctl.h
LOG_TAIL_LINES = 40
GUARD_START_TIMEOUT_S = 30.0


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the parent (the Ray actor) dies.

    The engine runs in its own session, so a SIGKILLed actor would otherwise
    leave it running; vLLM's own processes follow their API server down.
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _before_exec(cpus: frozenset[int] | None) -> Callable[[], None]:
    """The child's setup before exec: die with the parent and, given `cpus`, run on exactly those.

    A worker that pinned itself for a cell's client (workers/signals/host.py) would otherwise pass that
    pin on to every engine it starts, a relaunch after a failed reset included.
    """

    def setup() -> None:
        _die_with_parent()
        if cpus:
            os.sched_setaffinity(0, cpus)

    return setup


def exit_description(code: int) -> str:
    """`signal 9` for a process killed by SIGKILL, `code 1` for one that exited with 1."""
    return f"signal {-code}" if code < 0 else f"code {code}"


def start_guard(record: EngineRecord, record_path: Path | None) -> ProcessId | None:
    """Start the engine's guard (workers/engine/guard.py), detached; None if it could not start."""
    argv = [sys.executable, "-m", "workers.engine.guard", str(record_path or "")]
    try:
        done = subprocess.run(
            argv,
            input=record.to_json().encode(),
            capture_output=True,
            timeout=GUARD_START_TIMEOUT_S,
            start_new_session=True,
            check=True,
        )
        return ProcessId.of(psutil.Process(int(done.stdout.split()[0])))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError, psutil.Error):
        return None


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


# Intel/LLVM OpenMP registers each process that loads it as /dev/shm/__KMP_REGISTERED_LIB_<pid>[_<uid>]
# and removes the file only at a clean exit: a killed engine's stay, about one per process.
KMP_SHM = Path("/dev/shm")
KMP_PREFIX = "__KMP_REGISTERED_LIB_"


def remove_kmp_files(pids: set[int], folder: Path = KMP_SHM) -> list[Path]:
    """Remove the OpenMP registration files whose name carries one of `pids` (the engine's); return them."""
    removed = []
    with contextlib.suppress(OSError):
        for path in folder.glob(f"{KMP_PREFIX}*"):
            pid = path.name.removeprefix(KMP_PREFIX).split("_", 1)[0]
            if pid.isdigit() and int(pid) in pids:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


def running(proc: psutil.Process) -> bool:
    """Alive and not a zombie (is_running also tells a reused pid from the process it was)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def engine_tree_now(root_pid: int) -> list[tuple[EngineProcess, psutil.Process]]:
    """The engine's processes below `root_pid` now, each with its role (workers/engine/tree.py).

    The API server is watched through its Popen (its exit code); descendants that
    are not the engine (a resource tracker, compiler helpers) are left out.
    """
    found: list[tuple[EngineProcess, psutil.Process]] = []
    try:
        level = [psutil.Process(root_pid)]
    except psutil.Error:
        return found
    depth = 0
    while level:
        depth += 1
        below: list[psutil.Process] = []
        for parent in level:
            with contextlib.suppress(psutil.Error):
                below += parent.children()
        for proc in below:
            with contextlib.suppress(psutil.Error):
                if (role := process_role(proc.cmdline(), proc.name(), depth)) is not None:
                    found.append((EngineProcess(role, proc.pid, depth), proc))
        level = below
    return found


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
        registry_dir: Path | None = None,
        guard: bool = True,
        cpus: frozenset[int] | None = None,
    ) -> None:
        self.argv = argv
        self.env = env
        self.endpoint = endpoint
        self.log_path = log_path
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        # Where this node's engines are recorded (engine_registry.node_dir); None: not recorded.
        self.registry_dir = registry_dir
        self.use_guard = guard
        # The cores the engine starts on (None: the starting process's own); pins may move it later.
        self.cpus = cpus
        self.engine_id = secrets.token_hex(8)
        self.proc: subprocess.Popen[bytes] | None = None
        self.pids_seen: set[int] = set()
        # The same processes as psutil objects: signalling one checks that its pid was not reused.
        self.children_seen: dict[int, psutil.Process] = {}
        self.record: EngineRecord | None = None
        self.record_path: Path | None = None
        self.ready_s: float | None = None
        # The engine's processes as they were when it became ready: any of them gone is its death.
        self.watched: list[tuple[EngineProcess, psutil.Process]] = []

    def launch_env(self) -> dict[str, str]:
        """The engine's environment: its own plus its id and the lifetime plugin's switch."""
        return {
            **self.env,
            ENGINE_ID_ENV: self.engine_id,
            DIE_WITH_PARENT_ENV: "1",
            # setproctitle (VLLM::EngineCore, ...) would otherwise overwrite /proc/<pid>/environ.
            "SPT_NOENV": "1",
        }

    def start(self, append: bool = False) -> float:
        """Launch and block until /health answers; return seconds to ready.

        `append`: write after what the log holds (a relaunch) rather than start it anew.
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        start_ns = time.perf_counter_ns()
        with self.log_path.open("ab" if append else "wb") as log:
            log.write(("$ " + " ".join(self.argv) + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                env=self.launch_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_before_exec(self.cpus) if sys.platform == "linux" else None,
            )
        try:
            self._register(guard=self.use_guard)
            self._wait_ready(start_ns)
            # Now with EngineCore and its workers, for a sweep that cannot read their environment.
            self._register(guard=False)
            self.watched = engine_tree_now(self.proc.pid)
        except BaseException:
            self.stop()
            raise
        self.ready_s = (time.perf_counter_ns() - start_ns) / 1e9
        return self.ready_s

    def relaunch(self) -> float:
        """Stop, then start again at the same endpoint, its log continued; seconds to ready.

        The runner's fallback when a reset between cells fails (workers/engine/reset.py).
        """
        self.stop()
        self.watched = []
        return self.start(append=True)

    def _register(self, guard: bool) -> None:
        """Record the engine (and start its guard) so that it is ended even if this process dies."""
        assert self.proc is not None
        try:
            root = ProcessId.of(psutil.Process(self.proc.pid))
            owner = ProcessId.of(psutil.Process())
        except psutil.Error:
            return  # already exited: nothing to guard
        self._remember_children()
        children = []
        for proc in self.children_seen.values():
            with contextlib.suppress(psutil.Error):
                children.append(ProcessId.of(proc))
        self.record = EngineRecord(
            engine_id=self.engine_id,
            pgid=self.proc.pid,
            root=root,
            owner=owner,
            log_path=str(self.log_path),
            children=children,
            guard=self.record.guard if self.record is not None else None,
        )
        if self.registry_dir is not None:
            self.record_path = registry.write(self.registry_dir, self.record)
        if guard:
            self.record = dataclasses.replace(self.record, guard=start_guard(self.record, self.record_path))
            if self.registry_dir is not None:
                self.record_path = registry.write(self.registry_dir, self.record)

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

    def exit_code(self, wait_s: float = 0.0) -> int | None:
        """Its exit code (negative: the killing signal), waiting up to `wait_s`; None while it runs."""
        if self.proc is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=wait_s) if wait_s > 0 else self.proc.poll()
        return None

    def root(self) -> EngineProcess | None:
        """The API server, as named in a dead engine's error."""
        return None if self.proc is None else EngineProcess(API_SERVER, self.proc.pid, 0)

    def lost(self) -> list[EngineProcess]:
        """The engine's processes that are gone (exited, or a zombie): the API server, EngineCore, workers.

        Those seen when it became ready are checked; before that, the API server alone.
        """
        if (root := self.root()) is None:
            return []
        gone = [info for info, proc in self.watched if not running(proc)]
        return [root, *gone] if self.exit_code() is not None else gone

    def wait_lost(self, wait_s: float) -> list[EngineProcess]:
        """`lost()`, waiting up to `wait_s` for a dying engine to show which of its processes went."""
        deadline = time.monotonic() + wait_s
        while not (lost := self.lost()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return lost

    def _remember_children(self) -> None:
        """Track descendants while the root lives, so orphans can still be found later."""
        if self.proc is None:
            return
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(self.proc.pid)
            for child in root.children(recursive=True):
                self.children_seen.setdefault(child.pid, child)
                self.pids_seen.add(child.pid)

    def stop(self) -> None:
        """Kill the whole process tree; raise EngineError if anything survives."""
        if self.proc is None:
            return
        self._remember_children()
        survivors = kill_tree(self.proc.pid, self.proc.pid, self.stop_timeout_s)
        for proc in self.children_seen.values():
            # psutil refuses to signal a pid that now belongs to another process.
            with contextlib.suppress(psutil.Error):
                proc.kill()
                proc.wait(timeout=self.stop_timeout_s)
        if self.record is not None:
            # Anything carrying the engine's id that left its process group, then the guard.
            survivors += registry.kill(registry.engine_processes(self.record), self.stop_timeout_s)
            if self.record.guard is not None and (guard := self.record.guard.find()) is not None:
                registry.kill([guard], self.stop_timeout_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=self.stop_timeout_s)
        remove_kmp_files({self.proc.pid, *self.pids_seen, *self.children_seen} - set(survivors))
        if survivors:
            raise EngineError(f"engine processes survived teardown: {sorted(set(survivors))}")
        registry.remove(self.record_path)
        self.record_path = None

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

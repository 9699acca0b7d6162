"""`lifetime` plugin: every process of a harness-started engine dies with its parent.

The harness starts `vllm serve` with PR_SET_PDEATHSIG, so the API server dies
with the Ray actor that started it; vLLM's own processes do not follow it down
(an API server killed with SIGKILL leaves its EngineCore, and that one its
workers, running under PID 1). vLLM loads general plugins in each of its
processes, so this one sets PR_SET_PDEATHSIG(SIGKILL) in every process of the
engine: in a spawned one when vLLM loads it there, in a forked one through an
at-fork hook (a forked child inherits the parent's loaded plugins and does not
load them again). A process whose death signal is already set (the API server,
by the harness) keeps it.

Enabled by LEVER_DIE_WITH_PARENT=1, which the harness sets on every engine it
starts (workers/engine/process.py); otherwise register() does nothing. Linux only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import signal
import sys
import threading
from typing import Any

from lever_plugins import env

ENV_FLAG = "LEVER_DIE_WITH_PARENT"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_GET_PDEATHSIG = 2
DEATH_SIGNAL = signal.SIGKILL

logger = logging.getLogger("vllm.lever_plugins")

# Set in the parent just before a fork, read in the child (a copy of the parent's memory).
_fork_parent: int | None = None
_fork_from_main_thread = False
_hooked = False


def _prctl() -> Any:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.prctl


def death_signal() -> int:
    """This process's parent-death signal (0: none)."""
    value = ctypes.c_int(0)
    _prctl()(PR_GET_PDEATHSIG, ctypes.byref(value))
    return value.value


def die_with_parent(parent: int | None) -> None:
    """SIGKILL this process when its parent dies; at once if `parent` is already gone."""
    _prctl()(PR_SET_PDEATHSIG, int(DEATH_SIGNAL))
    # The parent may have died before the signal was armed: then it is never sent.
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), DEATH_SIGNAL)


def _before_fork() -> None:
    global _fork_parent, _fork_from_main_thread
    _fork_parent = os.getpid()
    _fork_from_main_thread = threading.current_thread() is threading.main_thread()


def _after_fork_in_child() -> None:
    # The signal follows the thread that forked, not the process: a child forked from a
    # short-lived thread would be killed when that thread ends, so only main-thread forks
    # (vLLM's EngineCore, workers and TP ranks) are armed.
    if _fork_from_main_thread:
        die_with_parent(_fork_parent)


def _spawn_parent() -> int | None:
    """The pid of the process that spawned this one through multiprocessing, if any."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None else None


def register() -> None:
    """vLLM general-plugin entry point: arm this process and every child it forks."""
    global _hooked
    if not env.enabled(ENV_FLAG) or not sys.platform.startswith("linux"):
        return
    if death_signal() == 0:
        die_with_parent(_spawn_parent())
    if not _hooked:
        os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
        _hooked = True
    logger.info(
        "lever_plugins lifetime: pid %d dies with its parent %d (signal %d)",
        os.getpid(),
        os.getppid(),
        death_signal(),
    )

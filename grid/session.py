"""Sessions: one id per launch of a grid and the environment it ran in."""

from __future__ import annotations

import datetime as dt
import platform
import secrets
import socket
import subprocess
import sys
from typing import Any

from grid.paths import PROJECT_ROOT


def new_session_id() -> str:
    """UTC start time plus a random suffix: sortable and unique across hosts."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def harness_version() -> str:
    """Git SHA of the harness checkout (with -dirty), or 'unknown' outside git."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def fingerprint(session_id: str, config_hash: str) -> dict[str, Any]:
    """The driver's view of the environment; engines add their vLLM version per cell."""
    return {
        "session_id": session_id,
        "config_hash": config_hash,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "harness_version": harness_version(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }

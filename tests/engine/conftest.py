"""Real-engine tests: the CPU build of vLLM serving SmolLM2 (run `make assets` first).

One grid run (2 engines x 2 corpora through a local Ray cluster) is shared by
the whole module; each engine costs ~1 minute to start on a 2-core machine.
"""

from __future__ import annotations

import psutil
import pytest

from vocab.paths import project_path

ENGINE_MODULE = "vllm.entrypoints"


def engine_processes() -> list[psutil.Process]:
    """Running processes that are (or were started by) a vLLM server."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if ENGINE_MODULE in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


@pytest.fixture(scope="session", autouse=True)
def _assets_ready():
    if not (project_path(".cache/models/SmolLM2-135M-Instruct") / "config.json").is_file():
        pytest.fail("SmolLM2 is not converted; run `make assets` (make test does it)")

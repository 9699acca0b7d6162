"""A cell whose engine died names the engine, the stage and its last log lines (workers/attempts.py)."""

import subprocess
import sys

from workers.attempts import engine_death, log_lines_before_death
from workers.engine.process import Engine, exit_description, new_endpoint
from workers.engine.tree import EngineProcess

LOG = """$ python -m vllm.entrypoints.openai.api_server --api-key secret-key
(APIServer pid=1) INFO Starting vLLM API server
INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 200 OK
(EngineCore pid=2) ERROR EngineCore encountered a fatal error.

INFO:     127.0.0.1:5002 - "GET /metrics HTTP/1.1" 200 OK
"""


def test_exit_codes_read_as_signals_or_codes():
    assert exit_description(-9) == "signal 9"
    assert exit_description(1) == "code 1"


def test_the_error_names_the_death_the_stage_and_the_lines_that_say_something(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(LOG)
    engine = Engine([sys.executable], {}, new_endpoint(), log, start_timeout_s=1)
    engine.proc = subprocess.Popen(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    )
    engine.proc.wait()
    pid = engine.proc.pid
    error = engine_death(engine, engine.lost(), "measured load")
    assert error == (
        f"engine exited (signal 9) during the measured load: API server (pid {pid}) gone; "
        "last lines of its log: "
        "(APIServer pid=1) INFO Starting vLLM API server | "
        "(EngineCore pid=2) ERROR EngineCore encountered a fatal error."
    )
    assert "secret-key" not in error  # the command line the log opens with holds the API key


def test_a_dead_engine_core_is_named_with_how_the_requests_saw_it(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(LOG)
    engine = Engine([sys.executable], {}, new_endpoint(), log, start_timeout_s=1)
    engine.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lost = [EngineProcess("EngineCore", 12, 1)]
        error = engine_death(engine, lost, "measured load", "HTTP 500 to 16 of 24 requests")
    finally:
        engine.proc.kill()
        engine.proc.wait()
    assert error.startswith(
        f"engine died during the measured load: EngineCore (pid 12) gone, API server (pid {engine.proc.pid}) "
        "still up (HTTP 500 to 16 of 24 requests); last lines of its log: (APIServer pid=1)"
    )


def test_an_empty_log_says_so(tmp_path):
    assert log_lines_before_death(tmp_path / "absent.log") == "(empty)"

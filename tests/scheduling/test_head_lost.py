"""The Ray head (gcs_server) killed mid-run (issue 45 item 8): the driver ends the session itself with
its own last line, exit 1, well before Ray's own end (a minute after the head went, with Ray's message
as the last line); the session's end is written and its phases folder is gone.

Its own local cluster (the shared fake cluster must outlive this test): a driver subprocess starts one
as `grid run` does with no ray.address, and the GCS among its descendants is killed.
"""

from __future__ import annotations

import json
import os
import signal
import time

import psutil

from tests.scheduling.conftest import stub_processes
from tests.scheduling.test_stop import own_cluster_overrides, start_driver, wait_for_first_cell


def gcs_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True) if p.name() == "gcs_server"]


def test_a_lost_ray_head_ends_the_session_with_its_own_line_and_its_end_written(inputs):
    overrides = own_cluster_overrides(inputs)
    driver = start_driver(overrides)
    try:
        wait_for_first_cell(inputs, driver)
        (gcs,) = gcs_of(driver.pid)
        gcs.kill()
        killed = time.time()
        output, _ = driver.communicate(timeout=90)
        took_s = time.time() - killed
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    lines = [line for line in output.splitlines() if line.strip()]
    assert driver.returncode == 1, output
    assert took_s < 45, f"{took_s:.0f} s: Ray's own end comes at 60 s\n{output}"
    # Its own line, last (a wrapped console line joined): what happened and what to do.
    last = " ".join(output[output.rindex("stopped: ") :].split())
    assert lines[-1] in output[output.rindex("stopped: ") :], lines[-3:]
    assert last.startswith("stopped: the Ray head was lost (its GCS at "), last
    assert "run the same command again to resume" in last
    assert "Failed to connect to GCS" not in output and "Traceback" not in output
    (session_file,) = (inputs / "store" / "sessions").glob("*.json")
    session = json.loads(session_file.read_text())
    assert session.get("ended_at"), "the session's end is written"
    assert not (inputs / "store" / "phases" / session["session_id"]).exists()
    # No stand-in engine outlives the cluster.
    _, alive = psutil.wait_procs(stub_processes(), timeout=30)
    assert not alive

"""A local Ray start that times out on a starved host is tried again (grid/orchestrate/schedule.connect).

CI once lost a run this way: the raylet died at start (its fixed 15 s wait for the dashboard agent's
port file, ray-project/ray#65983) and ray.init raised "The current node timed out during startup".
Ray's own start cannot be starved on demand, so ray.init is faked here; the text it raises is
checked against Ray's source, so a Ray that rewords it fails this file instead of the retry going dead.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import psutil
import pytest
import ray._private.node
import ray._private.services

from grid.orchestrate import schedule

RAY_TIMEOUT = (
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)


class FakeInit:
    """ray.init that fails `failures` times, each failure leaving a child process behind as Ray's would."""

    def __init__(self, failures: int, error: type[BaseException] = Exception, text: str = RAY_TIMEOUT):
        self.failures, self.error, self.text = failures, error, text
        self.calls: list[dict] = []
        self.left: list[subprocess.Popen] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        if len(self.calls) <= self.failures:
            self.left.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
            raise self.error(self.text)


@pytest.fixture
def fake_ray(monkeypatch):
    def install(fake: FakeInit) -> FakeInit:
        monkeypatch.setattr(schedule.ray, "init", fake)
        monkeypatch.setattr(schedule.ray, "shutdown", lambda: None)
        monkeypatch.setattr(schedule, "LOCAL_START_BACKOFF_S", 0.0)
        return fake

    yield install


def ended(proc: subprocess.Popen) -> bool:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return False
    return True


def test_the_text_this_retries_on_is_what_ray_raises():
    assert "timed out during startup" in inspect.getsource(ray._private.node)
    assert "waiting for node to startup" in inspect.getsource(ray._private.services)
    assert schedule.start_timed_out(Exception(RAY_TIMEOUT))
    assert not schedule.start_timed_out(Exception("Address already in use"))
    assert not schedule.start_timed_out(ValueError("num_cpus must be an int"))


def test_a_start_that_times_out_is_tried_again_after_ending_what_it_left(fake_ray, capsys):
    fake = fake_ray(FakeInit(failures=1))
    schedule.connect("local")
    assert len(fake.calls) == 2
    assert fake.calls[1]["_node_ip_address"] == "127.0.0.1"
    assert ended(fake.left[0]), "the failed start's process was left running"
    assert "trying again (2 of 3)" in capsys.readouterr().err


def test_a_start_that_keeps_timing_out_ends_with_what_to_do(fake_ray):
    fake = fake_ray(FakeInit(failures=99))
    with pytest.raises(RuntimeError, match=r"did not start in 3 tries.*ray\.address"):
        schedule.connect("local")
    assert len(fake.calls) == schedule.LOCAL_START_ATTEMPTS
    assert all(ended(proc) for proc in fake.left)


def test_any_other_start_error_is_raised_at_once(fake_ray):
    fake = fake_ray(FakeInit(failures=1, error=ValueError, text="bad argument"))
    with pytest.raises(ValueError, match="bad argument"):
        schedule.connect("local")
    assert len(fake.calls) == 1
    fake.left[0].kill()


def test_joining_a_named_cluster_is_not_retried(fake_ray):
    # A named address that does not answer is the user's to fix, not a starved local start.
    fake = fake_ray(FakeInit(failures=1))
    with pytest.raises(Exception, match="timed out during startup"):
        schedule.connect("ray://10.0.0.1:10001")
    assert len(fake.calls) == 1
    assert "_node_ip_address" not in fake.calls[0]
    fake.left[0].kill()


def test_processes_from_before_the_start_are_not_touched(fake_ray):
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fake_ray(FakeInit(failures=1))
        schedule.connect("local")
        assert psutil.pid_exists(mine.pid) and mine.poll() is None
    finally:
        mine.kill()
        mine.wait()

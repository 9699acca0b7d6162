"""An object read that fails while its body streams is tried again (CI, 2026-12-01: "AWS Error
INTERNAL_FAILURE during GetObject operation: Failed to flush response stream" ended a lease racer)."""

import io

import pytest

import store.fs
from store.fs import READ_ATTEMPTS, Store

FLUSH = "AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response stream"


class Flaky:
    """open_input_stream fails `failures` times with `error`, then serves `data`."""

    def __init__(self, failures: int, error: OSError, data: bytes = b"lease") -> None:
        self.failures, self.error, self.data, self.opened = failures, error, data, 0

    def open_input_stream(self, path: str) -> io.BytesIO:
        self.opened += 1
        if self.opened <= self.failures:
            raise self.error
        return io.BytesIO(self.data)


def store_on(fs: Flaky) -> Store:
    return Store("s3://bucket/prefix", (), fs, "bucket/prefix")  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def no_wait(monkeypatch):
    monkeypatch.setattr(store.fs, "READ_RETRY_S", 0.0)


def test_a_read_that_fails_midway_is_tried_again():
    fs = Flaky(READ_ATTEMPTS - 1, OSError(FLUSH))
    assert store_on(fs).read_bytes("leases/c1.json") == b"lease"
    assert fs.opened == READ_ATTEMPTS


def test_a_read_that_keeps_failing_raises_the_error_after_the_last_attempt():
    fs = Flaky(READ_ATTEMPTS, OSError(FLUSH))
    with pytest.raises(OSError, match="Failed to flush"):
        store_on(fs).read_bytes("leases/c1.json")
    assert fs.opened == READ_ATTEMPTS


def test_a_missing_object_is_not_retried():
    fs = Flaky(1, FileNotFoundError("leases/c1.json"))
    with pytest.raises(FileNotFoundError):
        store_on(fs).read_bytes("leases/c1.json")
    assert fs.opened == 1

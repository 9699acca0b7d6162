"""A local S3 API for the tests: moto's server on 127.0.0.1 (issue 19).

moto needs botocore, which pins python-dateutil below 3, while the harness's
venv carries the python-dateutil 4 the code_complete corpus is built from; so
`scripts/setup_venv.sh` installs moto[server] into its own venv (`.venv-s3`,
the `s3test` extra) and the server runs from there as a child process. Where
moto is importable in this venv instead, it runs in-process
(moto.server.ThreadedMotoServer). Neither: the S3 tests are skipped, saying so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs

PROJECT = Path(__file__).resolve().parent.parent
S3_VENV = Path(os.environ.get("LEVER_GRID_S3_VENV", PROJECT / ".venv-s3"))
HOST = "127.0.0.1"
# Credentials the fake server accepts; set before Ray starts (tests/conftest.py), so workers inherit them.
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def wait_listening(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"moto server on {HOST}:{port} did not start in {timeout_s:.0f} s")


def why_unavailable() -> str | None:
    if (S3_VENV / "bin" / "python").exists() or importlib.util.find_spec("moto") is not None:
        return None
    return "no local S3 server: run scripts/setup_venv.sh (makes .venv-s3 with moto[server])"


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Yield `host:port` of a running moto S3 server; stopped afterwards."""
    python = S3_VENV / "bin" / "python"
    if python.exists():
        port = free_port()
        proc = subprocess.Popen(
            [str(python), "-m", "moto.server", "-H", HOST, "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_listening(port)
            yield f"{HOST}:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        return
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"{host}:{port}"
    finally:
        server.stop()


def store_options(endpoint: str) -> dict[str, str]:
    """paths.store_options for the local server (no credentials: those are in the environment).

    Timeouts of seconds, not the AWS SDK's 3 s without a byte: the server runs in the tests' own
    box, and a fresh clone's CI at load average 15+ starved it past 3 s (a driver of
    test_two_drivers stopped on `NETWORK_CONNECTION ... Less than 1 bytes/sec transferred the last
    3 seconds`, 2026-12-07). The store's own handling of a store that does not answer is tested
    apart (no server at the endpoint)."""
    return {"endpoint_override": endpoint, "scheme": "http", "region": "us-east-1",
            "request_timeout": "30", "connect_timeout": "10"}  # fmt: skip


def pyarrow_options(endpoint: str) -> dict[str, object]:
    """store_options as pyarrow's S3FileSystem takes them (the timeouts as seconds, not strings)."""
    options: dict[str, object] = dict(store_options(endpoint))
    for key in ("request_timeout", "connect_timeout"):
        options[key] = float(str(options[key]))
    return options


def new_bucket(endpoint: str) -> str:
    """Create a fresh bucket and return its name."""
    name = f"lever-{uuid.uuid4().hex[:12]}"
    fs = pafs.S3FileSystem(**pyarrow_options(endpoint), allow_bucket_creation=True)
    fs.create_dir(name)
    return name


def options_override(endpoint: str) -> list[str]:
    """The Hydra overrides that point a run at the local server (a dict key is added with +)."""
    return [f"+paths.store_options.{k}='{v}'" for k, v in store_options(endpoint).items()]


if __name__ == "__main__":  # python -m tests.s3server: a server for trying things by hand
    with moto_server() as where:
        print(f"moto S3 on {where}; Ctrl-C ends it", file=sys.stderr)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)

"""Issue 28, item 6: the hostile-input table (docs/own-traffic.md), measured, one row at a time.

Every row runs the command line (`grid.__main__.main`, in-process) on a bad input and checks that the
user sees one `error:` line (or the `left out:` line the row names), no traceback, and the exit code
of that table (2: nothing was launched). `grid.orchestrate.schedule.init_ray` and
`grid.orchestrate.schedule.run_phases` fail the test if reached where the row is knowable before a
launch, so no engine can start.
"""

from __future__ import annotations

import errno
import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import grid.orchestrate.run
import grid.orchestrate.schedule
import store.space
from grid.__main__ import main
from grid.config import catalog

UNREACHABLE = "http://127.0.0.1:1"  # nothing listens on port 1
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass(frozen=True)
class Row:
    """One row of the table: a command, its arguments, the words of the line the user sees, the exit."""

    name: str
    argv: tuple[str, ...]
    words: tuple[str, ...]
    code: int = 2
    absent: tuple[str, ...] = ()  # words the output must not hold (a secret, a wrong fix)
    setup: str | None = None  # a fixture-like step: see `prepare`
    stream: str = "err"  # where the line shows: "err" (error:) or "out" (left out:)
    env: dict[str, str] = field(default_factory=dict)
    usage: bool = False  # the error line is followed by the usage


def store_args(tmp: Path) -> tuple[str, ...]:
    return (f"paths.store={tmp / 'store'}",)


ROWS = [
    # -- secrets (issue 28 item 2) ---------------------------------------------------------------
    Row(
        "credentials in the store URL",
        ("run", "paths.store=s3://AKIAPLANTED:SECRETPLANTED@bucket/x"),
        ("error: paths.store s3://***@bucket/x holds credentials before its '@'",),
        absent=("SECRETPLANTED", "AKIAPLANTED"),
    ),
    Row(
        "credentials in the store URL's query",
        ("run", "paths.store='s3://b/x?access_key=AKIAPLANTED&secret_key=SECRETPLANTED'"),
        ("holds access_key, secret_key in its query",),
        absent=("SECRETPLANTED", "AKIAPLANTED"),
    ),
    Row(
        "a secret store option",
        ("run", "paths.store=s3://b/x", "+paths.store_options.secret_key=SECRETPLANTED"),
        ("error: paths.store_options may not hold secret_key",),
        absent=("SECRETPLANTED",),
    ),
    # -- issue 38 item 6 --------------------------------------------------------------------------
    Row(
        "credentials in paths.data_dir",
        ("run", "paths.data_dir=s3://AKIAPLANTED:SECRETPLANTED@bucket/data"),
        ("error: paths.data_dir s3://***@bucket/data holds credentials before its '@'",),
        absent=("SECRETPLANTED", "AKIAPLANTED"),
    ),
    Row(
        "credentials inside endpoint_override",
        (
            "run",
            "paths.store=s3://b/x",
            "+paths.store_options.endpoint_override=http://AKIAPLANTED:SECRETPLANTED@h:9",
        ),
        ("error: paths.store_options.endpoint_override http://***@h:9 holds credentials before its '@'",),
        absent=("SECRETPLANTED", "AKIAPLANTED"),
    ),
    # -- issue 45 item 8: a `stores` entry of compare is named as itself -------------------------
    Row(
        "credentials in a compare stores entry",
        ("compare", "stores=[s3://b/y,s3://AKIAPLANTED:SECRETPLANTED@bucket/x]"),
        ("error: stores[1] s3://***@bucket/x holds credentials before its '@'",),
        absent=("SECRETPLANTED", "AKIAPLANTED", "paths.store "),
    ),
    Row(
        "store options where nothing is a URL",
        ("run", "+paths.store_options.region=eu"),
        ("error: paths.store_options apply to URL stores (s3://...) only",),
    ),
    Row(
        "grid.launches_per_argv=1 under engine_reuse=auto",
        ("run", "grid.launches_per_argv=1"),
        ("error: grid.launches_per_argv=1 applies to grid.engine_reuse=shared only",),
    ),
    Row(
        "a YAML error in an unused LEVER_GRID_CONF file",
        ("plan",),
        ("corpus/unused.yaml, line ", ": not valid YAML (", "); fix the file there"),
        setup="bad_unused_yaml",
    ),
    *(
        Row(
            f"a store path that does not exist: {command}",
            (command, "paths.store=MISSING", *extra),
            ("error: paths.store ", "/no-such-store does not exist; check the path"),
            setup="missing",
        )
        for command, extra in (
            ("status", ()),
            ("summary", ()),
            ("report", ()),
            ("compare", ("sessions=[a,b]",)),
            ("confirm", ()),
        )
    ),
    # -- values out of range, empty paths, run.force (item 3) ----------------------------------
    Row("an empty path", ("run", "paths.store="), ("error: paths.store is empty",)),
    Row("a negative temperature", ("run", "load.temperature=-1"), ("error: load.temperature must be >= 0",)),
    Row("a negative count", ("run", "ray.max_in_flight=-5"), ("error: ray.max_in_flight must be >= 0",)),
    Row("a zero lease", ("run", "run.lease_s=0"), ("error: run.lease_s must be > 0",)),
    Row(
        "sequential looks out of order",
        ("plan", "grid.sequential.enabled=true", "grid.sequential.looks=[5,3]"),
        ("error: grid.sequential.looks=[5, 3]: cumulative repeats", "strictly increasing"),
    ),
    Row("no sequential looks", ("report", "grid.sequential.looks=[]"), ("error: grid.sequential.looks=[]",)),
    Row(
        "a concurrency no client can open",
        ("run", "load.concurrency=99999999999999999999"),
        ("error: load.concurrency must be >= 1 and <= 4,096",),
    ),
    Row(
        "run.force matching no cell",
        ("run", "run.force=[tiny/vna]"),
        ("error: run.force entry 'tiny/vna' starts no cell's key or label", "near matches"),
    ),
    Row("a tensor-parallel size of 0", ("run", "+model.tiny.tp=0"), ("error: model.tiny.tp must be >= 1",)),
    # -- names, options, config files ----------------------------------------------------------
    Row("an unknown lever", ("run", "grid.levers=[warp]"), ("error: unknown lever 'warp'",)),
    Row("an unknown command", ("rnu",), ("error: unknown command 'rnu'",), usage=True),
    Row("an unknown option", ("status", "--fast"), ("error: unknown option '--fast' for status",)),
    Row(
        "a YAML error in a LEVER_GRID_CONF file",
        ("run", "experiment=broken"),
        ("experiment/broken.yaml, line 4, column 1: not valid YAML (", "); fix the file there"),
        setup="bad_yaml",
    ),
    # -- an object store that does not answer, or refuses (item 4) ------------------------------
    *(
        Row(
            f"an unreachable s3:// store: {command}",
            (command, "paths.store=s3://bkt/x", f"+paths.store_options.endpoint_override={UNREACHABLE}"),
            (f"error: store s3://bkt/x at {UNREACHABLE} did not answer or refused (", "NETWORK_CONNECTION"),
            env=S3_ENV,
        )
        for command in ("run", "status", "summary", "report")
    ),
    *(
        Row(
            f"an s3:// store that refuses: {command}",
            (command, "paths.store=s3://bkt/x", "+paths.store_options.endpoint_override=REFUSING"),
            ("error: store s3://bkt/x at http://127.0.0.1:", "did not answer or refused (", "ACCESS_DENIED"),
            env=S3_ENV,
            setup="refusing",
        )
        for command in ("run", "status", "summary", "report")
    ),
    # -- a local store that cannot take results (item 4) --------------------------------------
    Row(
        "a full store (the probe's bytes)",
        ("run",),
        ("error: paths.store", "is full (No space left on device", "free space there or point paths.store"),
        absent=("permissions",),
        setup="full_probe",
    ),
    Row(
        "a full store (the session file)",
        ("run",),
        (
            "error: store cannot take results:",
            "is full (No space left on device)",
            "the session record could not be written, so nothing was launched",
        ),
        absent=("permissions",),
        setup="full_session",
    ),
    Row(
        "a store with less free space than run.min_store_free_mb",
        ("run", "run.min_store_free_mb=999999999"),
        ("error: paths.store", "MiB free, less than the", "(run.min_store_free_mb)"),
    ),
    Row(
        "a store that cannot be made",
        ("run", "paths.store=/proc/lever-grid-store"),
        ("error: paths.store /proc/lever-grid-store cannot be written (",),
    ),
    # -- a garbled manifest: named, never dropped silently (item 4) -----------------------------
    *(
        Row(
            f"a garbled manifest.json: {command}",
            (command,),
            (words,),
            code=0,
            setup="garbled",
            stream="out",
        )
        for command, words in (
            ("status", "store: "),
            ("summary", "left out: "),
            ("report", "left out: "),
        )
    ),
]


@pytest.fixture(autouse=True)
def nothing_launches(monkeypatch):
    """No row may get as far as Ray or an engine."""

    def refuse(*args, **kwargs):
        raise AssertionError("an engine launch was reached")

    monkeypatch.setattr(grid.orchestrate.schedule, "init_ray", refuse)
    monkeypatch.setattr(grid.orchestrate.schedule, "run_phases", refuse)
    monkeypatch.delenv(catalog.CONF_ENV, raising=False)
    yield
    catalog.activate(None)


@pytest.fixture(scope="module")
def refusing_endpoint() -> Iterator[str]:
    """An HTTP server that answers every S3 request 403 AccessDenied."""

    class Deny(http.server.BaseHTTPRequestHandler):
        def deny(self) -> None:
            body = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = deny

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def garble_a_manifest(store: Path) -> None:
    """A store whose one attempt of the smoke grid's first van cell has a manifest cut short."""
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config

    cells = expand(to_config(compose_config([f"paths.store={store}"])))
    cell = next(c for c in cells if c.label == "tiny/van/code_complete/r0")
    folder = store / "cells" / cell.key / "20261203T000000Z-aaaaaa-a1"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"cell_key": cell.key, "status": "ok"})[:20])


def user_conf(tmp_path: Path, monkeypatch, relative: str, text: str) -> None:
    """A user conf folder (LEVER_GRID_CONF) holding one file, `relative` under it, with `text`."""
    path = tmp_path / "conf" / relative
    path.parent.mkdir(parents=True)
    path.write_text(text)
    monkeypatch.setenv(catalog.CONF_ENV, str(tmp_path / "conf"))


def prepare(row: Row, tmp_path: Path, monkeypatch, refusing: str | None) -> list[str]:
    """The row's arguments, and whatever its setup needs in place."""
    argv = list(row.argv)
    if not any(a.startswith("paths.store=") for a in argv):
        argv += store_args(tmp_path)
    for key, value in row.env.items():
        monkeypatch.setenv(key, value)
    if row.setup == "refusing":
        argv = [a.replace("REFUSING", refusing or "") for a in argv]
    elif row.setup == "bad_yaml":
        user_conf(tmp_path, monkeypatch, "experiment/broken.yaml", "defaults:\n  - smoke\nfoo: [1, 2\n")
    elif row.setup == "full_probe":

        def full(folder: Path) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(store.space, "write_probe", full)
    elif row.setup == "full_session":

        def full(path, data) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(grid.orchestrate.run, "write_json", full)
    elif row.setup == "garbled":
        garble_a_manifest(tmp_path / "store")
    elif row.setup == "bad_unused_yaml":
        user_conf(tmp_path, monkeypatch, "corpus/unused.yaml", "name: unused\npath: [a\n")
    elif row.setup == "missing":
        argv = [a.replace("MISSING", str(tmp_path / "no-such-store")) for a in argv]
    return argv


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_hostile_input_is_one_line_and_its_exit_code(row, tmp_path, monkeypatch, capsys, request):
    refusing = request.getfixturevalue("refusing_endpoint") if row.setup == "refusing" else None
    argv = prepare(row, tmp_path, monkeypatch, refusing)
    code = main(argv)
    captured = capsys.readouterr()
    everything = captured.out + captured.err
    assert code == row.code, everything
    assert "Traceback" not in everything
    if row.stream == "err":
        lines = captured.err.splitlines()
        line = lines[0]
        assert line.startswith("error: "), line
        assert len(lines) == 1 or (row.usage and lines[1].startswith("usage: ")), lines  # one line
    else:
        line = " ".join(everything.split())  # a table's line may wrap at the console's width
    for words in row.words:
        assert words in line, line
    for words in row.absent:
        assert words not in everything, everything
    if row.setup == "garbled":
        assert "/manifest.json: unreadable manifest (" in line
    if row.setup == "missing":
        assert not (tmp_path / "no-such-store").exists(), "a reading command created the store"

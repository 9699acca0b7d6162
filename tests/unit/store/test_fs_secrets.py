"""Issue 28, item 2: credentials in the store URL, its query or its options are refused, and never shown.

`s3://KEY:SECRET@bucket/x` was accepted and pyarrow's traceback printed the secret key; a
`?secret_key=...` query was not refused; a secret option was refused as a traceback.
"""

import subprocess
import sys

import pytest

from store.fs import Store, StoreError, StorePath, open_store, redact, url_secret_problem
from vocab.paths import PROJECT_ROOT

KEY_ID = "AKIAPLANTEDKEYID0001"
SECRET = "planted/Secret+Value9"  # AWS secrets hold '/' and '+', which split a URL where a host would be


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"s3://{KEY_ID}:{SECRET}@bucket/x", "s3://***@bucket/x"),
        (f"paths.store=s3://{KEY_ID}@bucket/x failed", "paths.store=s3://***@bucket/x failed"),
        (f"gs://u:{SECRET}@b/p", "gs://***@b/p"),
        (f"https://user:{SECRET}@host:9000/p", "https://***@host:9000/p"),
        (
            f"s3://bucket/x?region=eu&access_key={KEY_ID}&secret_key={SECRET}",
            "s3://bucket/x?region=eu&access_key=***&secret_key=***",
        ),
        (
            f"s3://b/x?X-Amz-Security-Token={SECRET};password={SECRET}",
            "s3://b/x?X-Amz-Security-Token=***;password=***",
        ),
        (f"+paths.store_options.secret_key={SECRET} x", "+paths.store_options.secret_key=*** x"),
        # Nothing secret: left as it is.
        ("s3://bucket/results", "s3://bucket/results"),
        ("s3://bucket/a:b@c/d", "s3://bucket/a:b@c/d"),  # ':' and '@' inside the key, not user info
        ("hdfs://namenode:8020/a", "hdfs://namenode:8020/a"),
        ("hdfs://namenode:8020/a@b", "hdfs://***@b"),  # over-redacted: the safe side
        (
            "+paths.store_options.endpoint_override=minio:9000",
            "+paths.store_options.endpoint_override=minio:9000",
        ),
        ("unknown key 'load.maxtokens': load has a, b", "unknown key 'load.maxtokens': load has a, b"),
    ],
)
def test_redact_hides_user_info_and_secret_values(text, shown):
    assert redact(text) == shown


@pytest.mark.parametrize(
    ("url", "options", "words"),
    [
        (f"s3://{KEY_ID}:{SECRET}@bucket/x", {}, "holds credentials before its '@'"),
        (f"s3://{KEY_ID}@bucket/x", {}, "holds credentials before its '@'"),
        (f"s3a://{KEY_ID}:{SECRET}@bucket/x", {}, "holds credentials before its '@'"),
        ("hdfs://me:plantedSecret@namenode/x", {}, "holds credentials before its '@'"),
        (
            f"s3://bucket/x?access_key={KEY_ID}&secret_key={SECRET}",
            {},
            "holds access_key, secret_key in its query",
        ),
        (f"s3://bucket/x?session_token={SECRET}", {}, "holds session_token in its query"),
        (f"gs://bucket/x?password={SECRET}", {}, "holds password in its query"),
        ("s3://bucket/x", {"secret_key": SECRET}, "paths.store_options may not hold secret_key"),
        ("s3://bucket/x", {"api_key": SECRET}, "paths.store_options may not hold api_key"),
    ],
)
def test_credentials_are_refused_without_echoing_them(url, options, words):
    problem = url_secret_problem(url, options)
    assert problem is not None and words in problem
    assert "credentials come from the environment" in problem
    for part in (KEY_ID, SECRET, "Secret+Value9", "plantedSecret"):
        assert part not in problem
    with pytest.raises(StoreError) as info:
        open_store(url, options)
    assert str(info.value) == problem


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("s3://bucket/results", {"endpoint_override": "minio:9000", "scheme": "http", "region": "eu"}),
        ("s3://bucket/a:b@c", {}),
        ("hdfs://someone@namenode:8020/results", {}),  # a user name alone is no secret there
        ("/tmp/results", {}),
    ],
)
def test_a_store_without_credentials_passes(url, options):
    assert url_secret_problem(url, options) is None


def test_a_store_path_shows_itself_redacted():
    """Defence in depth: StorePath's str is what every message shows of a remote store."""
    root = StorePath(Store(f"s3://{KEY_ID}:{SECRET}@bucket/x"), "cells/c1")
    assert str(root) == "s3://***@bucket/x/cells/c1"
    assert SECRET not in repr(root.store)


# Each way of planting a secret, as a user would type it on the command line.
PLANTED = {
    "userinfo": [f"paths.store=s3://{KEY_ID}:{SECRET}@bucket/x"],
    "query": [f"paths.store='s3://bucket/x?access_key={KEY_ID}&secret_key={SECRET}'"],
    "token": [f"paths.store='s3://bucket/x?X-Amz-Security-Token={SECRET}'"],
    "option": ["paths.store=s3://bucket/x", f"+paths.store_options.secret_key={SECRET}"],
}


@pytest.mark.parametrize("command", ["plan", "run"])
def test_the_cli_refuses_a_planted_secret_in_one_line_that_never_shows_it(command):
    """The whole process's output, as a user's terminal (or a CI log) would keep it."""
    out = subprocess.run(
        [sys.executable, "-m", "grid", command, "experiment=smoke", *PLANTED["userinfo"]],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
    )
    everything = out.stdout + out.stderr
    assert out.returncode == 2, everything
    for part in (SECRET, KEY_ID, "Secret+Value9", "planted/"):
        assert part not in everything, everything
    assert "Traceback" not in everything
    (line,) = out.stderr.splitlines()
    assert line.startswith("error: ") and "credentials come from the environment" in line, line


@pytest.mark.parametrize("command", ["plan", "run", "status", "summary", "report", "corpus"])
@pytest.mark.parametrize("how", sorted(PLANTED))
def test_every_command_refuses_every_planted_form_without_showing_it(command, how, capfd):
    """The same through grid's main in this process (a subprocess each would cost ~5 s of imports)."""
    from grid.__main__ import main

    assert main([command, "experiment=smoke", *PLANTED[how]]) == 2
    captured = capfd.readouterr()
    everything = captured.out + captured.err
    for part in (SECRET, KEY_ID, "Secret+Value9", "planted/"):
        assert part not in everything, everything
    (line,) = captured.err.splitlines()
    assert line.startswith("error: ") and "credentials come from the environment" in line, line

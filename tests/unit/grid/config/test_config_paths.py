"""Issue 38 item 6: credentials in paths.data_dir are named as paths.data_dir; credentials inside a
store option's URL (endpoint_override) are refused; a local store takes store_options meant for an
s3:// data_dir."""

import pytest

from grid.__main__ import main

KEY, SECRET = "AKIAPLANTED", "plantedSecretValue"


def one_error(capsys) -> str:
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert SECRET not in out + err and KEY not in out + err
    return line


def test_credentials_in_the_data_dir_are_named_as_the_data_dir(capsys):
    assert main(["plan", "experiment=smoke", f"paths.data_dir=s3://{KEY}:{SECRET}@bucket/data"]) == 2
    line = one_error(capsys)
    assert line.startswith("error: paths.data_dir s3://***@bucket/data holds credentials"), line


@pytest.mark.parametrize(
    "endpoint",
    [f"http://{KEY}:{SECRET}@127.0.0.1:9000", f"'http://127.0.0.1:9000/?secret_key={SECRET}'"],
)
def test_credentials_inside_endpoint_override_are_refused(endpoint, capsys):
    argv = [
        "plan",
        "experiment=smoke",
        "paths.store=s3://bkt/x",
        f"+paths.store_options.endpoint_override={endpoint}",
    ]
    assert main(argv) == 2
    line = one_error(capsys)
    assert line.startswith("error: paths.store_options.endpoint_override http://"), line
    assert "credentials come from the environment" in line


def test_a_local_store_takes_options_meant_for_an_s3_data_dir(tmp_path, capsys):
    from grid.config.compose import compose_config
    from vocab.paths import store_path

    options = {"endpoint_override": "http://127.0.0.1:9000"}
    # The options go to the s3:// data_dir; the local store is opened without them.
    assert store_path(str(tmp_path), options) == tmp_path
    given = [f"paths.store={tmp_path}", "paths.data_dir=s3://bucket/data",
             "+paths.store_options.endpoint_override=http://127.0.0.1:9000"]  # fmt: skip
    assert compose_config(["experiment=smoke", *given]).paths.data_dir == "s3://bucket/data"
    # Where nothing is a URL the options would be lost silently: refused.
    assert main(["plan", "experiment=smoke", "+paths.store_options.region=eu"]) == 2
    assert "neither paths.store nor paths.data_dir is one" in one_error(capsys)


@pytest.mark.parametrize("value", [1, 2])
def test_launches_per_argv_outside_shared_launches_is_refused(value, capsys):
    """README: 1 is refused; under engine_reuse=auto it was accepted and did nothing."""
    assert main(["plan", "experiment=smoke", f"grid.launches_per_argv={value}"]) == 2
    line = one_error(capsys)
    assert line.startswith(
        f"error: grid.launches_per_argv={value} applies to grid.engine_reuse=shared only"
    ), line


def test_a_store_that_fills_while_a_cell_is_written_stops_the_run(tmp_path):
    """run.min_store_free_mb=0: the probe's 64 KiB fit, the cell's results did not; the worker retried
    on a new engine start and never said the store was full."""
    import errno

    from workers.runner import store_full

    exc = OSError(errno.ENOSPC, "No space left on device")
    assert store_full(tmp_path, exc) == (
        f"store cannot take results: {tmp_path} is full (No space left on device); "
        "free space there or point paths.store at another disk"
    )
    wrapped = RuntimeError("write failed")
    wrapped.__cause__ = OSError("IOError: [Errno 28] No space left on device")  # pyarrow's, no errno
    assert store_full(tmp_path, wrapped).startswith("store cannot take results:")
    assert store_full(tmp_path, OSError(errno.EACCES, "Permission denied")) is None


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_yaml_error_in_an_unused_user_conf_file_is_reported(command, tmp_path, monkeypatch, capsys):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "unused.yaml").write_text("name: unused\npath: [a\n")  # never named below
    monkeypatch.setenv("LEVER_GRID_CONF", str(tmp_path))
    assert main([command, "experiment=smoke", "grid.levers=[van]"]) == 2
    line = one_error(capsys)
    assert (
        line.startswith(f"error: {tmp_path / 'corpus' / 'unused.yaml'}, line ") and "not valid YAML" in line
    ), line


def test_credentials_in_an_endpoint_override_without_a_scheme_are_refused(capsys):
    """`endpoint_override=KEY:SECRET@host:9000` (no scheme) passed the check, and `status` printed it
    whole in its `did not answer` line."""
    argv = [
        "status",
        "paths.store=s3://bkt/x",
        f"+paths.store_options.endpoint_override={KEY}:{SECRET}@host:9000",
    ]
    assert main(argv) == 2
    line = one_error(capsys)
    assert line.startswith("error: paths.store_options.endpoint_override http://***@host:9000 holds"), line


def test_the_endpoint_in_a_message_hides_user_info_without_a_scheme(monkeypatch):
    from store.fs import Store

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"{KEY}:{SECRET}@host:9000")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    assert Store.open("s3://bkt/x").endpoint() == "***@host:9000"

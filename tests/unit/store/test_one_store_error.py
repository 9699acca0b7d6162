"""Issue 45 item 5: one StoreError class, and every command's store error is one line, exit 2, no secret.

`analysis.power --store` and `grid.plan.groups --store` caught vocab.errors.StoreError while the URL
check raised store.fs.StoreError: a traceback, exit 1.
"""

from __future__ import annotations

import pytest

import store.fs
import vocab.errors
from analysis import power
from grid.plan import groups

SECRET_URL = "s3://KEYPLANTED:SECRETPLANTED@host/x"
SPLIT = ["--start-s", "1", "--block-s", "1", "--half-width", "0.05"]


def test_there_is_one_store_error_class_and_it_is_a_grid_error():
    assert vocab.errors.StoreError is store.fs.StoreError
    assert issubclass(store.fs.StoreError, vocab.errors.GridError)
    # Callers that cope with a bad value (store_costs, grid's `error:` line) still catch it.
    assert issubclass(store.fs.StoreError, ValueError)


def error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text
    assert "SECRETPLANTED" not in text and "KEYPLANTED" not in text
    return [line for line in text.splitlines() if "error" in line]


def test_power_store_with_credentials_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        power.main(["--store", SECRET_URL])
    assert info.value.code == 2
    [line] = error_lines(capsys)
    assert "holds credentials" in line and "s3://***@host/x" in line


def test_groups_store_with_credentials_is_one_line_and_exit_2(capsys):
    assert groups.main(["--store", SECRET_URL, *SPLIT]) == 2
    [line] = error_lines(capsys)
    assert line.startswith("error: ") and "holds credentials" in line


def test_groups_store_that_does_not_answer_is_one_line_and_exit_2(capsys, monkeypatch):
    def unreachable(path, model, levers):
        raise store.fs.StoreUnreachable("store s3://***@bucket/x at http://127.0.0.1:1 did not answer")

    monkeypatch.setattr(groups, "sds_from_store", unreachable)
    assert groups.main(["--store", "s3://bucket/x", *SPLIT]) == 2
    [line] = error_lines(capsys)
    assert line.startswith("error: store s3://***@bucket/x")

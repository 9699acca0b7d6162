"""Issue 38 item 5: a store path that does not exist is an error for every command that reads one
(exit 2, one line), and nothing creates folders under it."""

import pytest

from grid.__main__ import main


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["status", "experiment=smoke"],
        ["status", "format=json"],
        ["summary"],
        ["summary", "format=csv"],
        ["report"],
        ["report", "experiment=smoke"],
        ["compare", "sessions=[a,b]"],
    ],
)
def test_a_missing_store_is_exit_2_and_one_line(argv, tmp_path, capsys):
    missing = tmp_path / "reslts"  # a mistyped path
    assert main([*argv, f"paths.store={missing}"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"error: paths.store {missing} does not exist; check the path (a store is the "
        "folder `python -m grid run` wrote, ./results by default)"
    ]
    assert not missing.exists(), "a reading command created the mistyped store"


def test_compare_names_the_missing_one_of_two_stores(tmp_path, capsys):
    there = tmp_path / "there"
    there.mkdir()
    assert main(["compare", f"stores=[{there},{tmp_path / 'gone'}]"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{tmp_path / 'gone'} does not exist" in err, err
    assert not (tmp_path / "gone").exists()


def test_a_file_is_not_a_store(tmp_path, capsys):
    afile = tmp_path / "cells.csv"
    afile.write_text("x\n")
    assert main(["summary", f"paths.store={afile}"]) == 2
    assert "is a file, not a store folder" in capsys.readouterr().err

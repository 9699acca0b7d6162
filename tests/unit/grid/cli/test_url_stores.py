"""Issue 45 item 8, the stores' minor items: `grid compare stores=[s3://a,s3://b]` takes
paths.store_options for its stores whatever paths.store is, a credential in a `stores` entry is
named as that entry (`stores[i]`), and an s3:// store that does not exist (no bucket, or nothing under
its prefix) is one line and exit 2 for every command that reads one; `grid report` writes no page into it.
"""

import json

import pyarrow.fs as pafs
import pytest

from grid.__main__ import main
from store.fs import open_store
from tests.s3server import new_bucket, options_override, pyarrow_options, store_options
from tests.unit.grid.cli.test_compare import SA, SB, write_side

PLANTED = "s3://AKIAPLANTED:SECRETPLANTED@bucket/x"


def test_compare_of_two_s3_stores_takes_the_store_options_for_them(s3_endpoint, capsys):
    """paths.store stays the default local `results`: the options configure the two stores."""
    urls = [f"s3://{new_bucket(s3_endpoint)}/results" for _ in range(2)]
    options = store_options(s3_endpoint)
    write_side(open_store(urls[0], options), SA, 1.0)
    write_side(open_store(urls[1], options), SB, 1.2)
    argv = ["compare", f"stores=[{urls[0]},{urls[1]}]", *options_override(s3_endpoint), "format=json"]
    assert main(argv) == 0, capsys.readouterr().err
    rows = {row["lever"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["bestkpad"]["ratio"] == pytest.approx(1.2) and rows["bestkpad"]["label"] == "real gain"


@pytest.mark.parametrize("position", [0, 1])
def test_a_credential_in_a_stores_entry_is_named_as_that_entry(position, capsys):
    stores = ["s3://bucket/y", "s3://bucket/y"]
    stores[position] = PLANTED
    assert main(["compare", f"stores=[{','.join(stores)}]"]) == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: stores[{position}] s3://***@bucket/x holds credentials before its '@'"
    ), err
    assert "paths.store " not in err[0]
    assert "SECRETPLANTED" not in captured.err + captured.out and "AKIAPLANTED" not in captured.err


@pytest.mark.parametrize("command", [["status"], ["summary"], ["report"], ["report", "experiment=smoke"]])
def test_an_s3_store_with_nothing_under_its_prefix_is_exit_2_and_one_line(command, s3_endpoint, capsys):
    bucket = new_bucket(s3_endpoint)
    url = f"s3://{bucket}/reslts"  # a mistyped prefix
    assert main([*command, f"paths.store={url}", *options_override(s3_endpoint)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"error: paths.store {url} holds no store: no object lies under it; check the URL and "
        "paths.store_options (a store is the prefix `python -m grid run` wrote)"
    ]
    # Nothing was written into the missing prefix (`report` wrote an empty page there).
    fs = pafs.S3FileSystem(**pyarrow_options(s3_endpoint))
    assert fs.get_file_info(pafs.FileSelector(bucket, recursive=True)) == []


def test_an_s3_store_whose_bucket_does_not_exist_says_so(s3_endpoint, capsys):
    url = "s3://no-such-bucket-here/results"
    assert main(["report", f"paths.store={url}", *options_override(s3_endpoint)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: paths.store {url} holds no store: its bucket 'no-such-bucket-here' does not exist at "
        f"http://{s3_endpoint}"
    ), err


def test_compare_names_the_missing_one_of_two_s3_stores(s3_endpoint, capsys):
    there = f"s3://{new_bucket(s3_endpoint)}/results"
    write_side(open_store(there, store_options(s3_endpoint)), SA, 1.0)
    gone = f"s3://{new_bucket(s3_endpoint)}/results"
    assert main(["compare", f"stores=[{there},{gone}]", *options_override(s3_endpoint)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: stores[1] {gone} holds no store"), err

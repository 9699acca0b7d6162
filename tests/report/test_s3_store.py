"""Issue 19: the report and a notebook read a store in S3 (moto's server on 127.0.0.1)."""

import json

import nbformat
import pyarrow.fs as pafs
from nbclient import NotebookClient

from grid.__main__ import main
from store.fs import open_store
from store.layout import StoreLayout
from tests.report.test_notebooks import EXPECTED, NOTEBOOKS, outputs_text
from tests.s3server import options_override


def uploaded(local, s3_url):
    """The synthetic store copied into the bucket; its StorePath."""
    url, options = s3_url
    root = open_store(url, options)
    pafs.copy_files(str(local), root.store.base, destination_filesystem=root.store.fs)
    return root


def test_report_command_writes_the_page_into_the_bucket(synthetic_store, s3_url, s3_endpoint, capsys):
    root = uploaded(synthetic_store, s3_url)
    assert main(["report", "experiment=smoke", f"paths.store={root}", *options_override(s3_endpoint)]) == 0
    path = StoreLayout(root).report_file("smoke")
    assert f"report: {path}" in capsys.readouterr().out and str(path).startswith("s3://")
    assert "0 of 4 cells of the experiment are in the store." in path.read_text()


def test_overview_notebook_runs_against_a_bucket(synthetic_store, s3_url, monkeypatch):
    root = uploaded(synthetic_store, s3_url)
    monkeypatch.setenv("LEVER_GRID_STORE", str(root))
    monkeypatch.setenv("LEVER_GRID_STORE_OPTIONS", json.dumps(s3_url[1]))
    book = nbformat.read(NOTEBOOKS / "overview.ipynb", as_version=4)
    NotebookClient(
        book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    text, images = outputs_text(book)
    assert images == 1
    for expected in EXPECTED["overview.ipynb"]:
        assert expected in text

"""Every notebook runs top to bottom against a store and shows its table and figure."""

import nbformat
import pytest
from nbclient import NotebookClient

from vocab.paths import PROJECT_ROOT

NOTEBOOKS = PROJECT_ROOT / "notebooks"
# What each notebook must show from the synthetic store.
EXPECTED = {
    "overview.ipynb": [
        "bestkpad K=8",
        "Over models: no held-out figure yet (2 models with a final lever)",
        "real gain",
    ],
    "best_k.ipynb": ["smaller K: the top K is no real gain over it", "within noise"],
    "drift.ipynb": ["20260102T000000Z-bbbbbb", "NVIDIA H200"],
}


def outputs_text(book):
    texts, images = [], 0
    for cell in book.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            images += "image/png" in data
            texts += [output.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")]
    return "\n".join(t if isinstance(t, str) else "".join(t) for t in texts), images


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_against_the_store(name, synthetic_store, monkeypatch):
    monkeypatch.setenv("LEVER_GRID_STORE", str(synthetic_store))
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    text, images = outputs_text(book)
    assert images == 1
    for expected in EXPECTED[name]:
        assert expected in text

"""The DuckDB snippet of docs/store-files.md ("The store", moved there from the README by issue 47)
runs against a store and reads what it says.

It failed with `NameError: Path`, and once fixed it mixed the drift anchors' runs (and the van
replicates, and every attempt of a cell measured again) in with the cells (issue 31). The page's
own block runs here, so an edit that breaks it fails this test.
"""

from __future__ import annotations

import ast
import re

from store.layout import StoreLayout
from store.writer import write_ok_attempt
from tests.unit.store.test_writer_read import records
from vocab.paths import project_path


def readme_snippet() -> str:
    """docs/store-files.md's python block that reads the store with DuckDB (`store.read.connect`)."""
    text = project_path("docs/store-files.md").read_text()
    blocks = [
        b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "from store.read import connect" in b
    ]
    assert len(blocks) == 1, "docs/store-files.md has one DuckDB snippet"
    return blocks[0]


def small_store(root):
    """Two cells (van measured twice, suffix once), the drift anchor at the start, a van replicate."""
    layout = StoreLayout(root)
    base = {"model": "tiny", "corpus": "chat_bench", "repeat": 0, "valid": True}
    rows = [
        ("van", "a1", {"lever": "van", "k": 0, "output_tok_per_s": 100.0}),
        ("van", "a2", {"lever": "van", "k": 0, "output_tok_per_s": 110.0}),
        ("suffix", "a3", {"lever": "suffix", "k": 8, "output_tok_per_s": 150.0}),
        ("anchor", "a4", {"lever": "van", "k": 0, "output_tok_per_s": 90.0, "anchor": "start"}),
        ("replicate", "a5", {"lever": "van", "k": 0, "output_tok_per_s": 105.0, "replicate": True}),
    ]
    for cell, attempt, figures in rows:
        summary = {**base, "anchor": None, "replicate": False, **figures}
        write_ok_attempt(
            layout, {"session_id": "s1", "cell_key": cell, "attempt_id": attempt}, records(2), summary
        )


def run_snippet(snippet: str, cwd, monkeypatch):
    """Execute `snippet` in `cwd` (whose results/ is the store); return its last expression's value."""
    monkeypatch.chdir(cwd)
    tree = ast.parse(snippet)
    *body, last = tree.body
    namespace: dict = {}
    exec(compile(ast.Module(body, type_ignores=[]), "docs/store-files.md", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "docs/store-files.md", "eval"), namespace)


def check(frame):
    assert list(frame["lever"]) == ["suffix", "van"]
    assert list(frame["output_tok_per_s"]) == [150.0, 110.0]  # van's latest attempt, no anchor, no replicate


def test_the_readme_snippet_runs(tmp_path, monkeypatch):
    small_store(tmp_path / "results")
    check(run_snippet(readme_snippet(), tmp_path, monkeypatch))

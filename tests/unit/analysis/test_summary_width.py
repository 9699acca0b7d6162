"""The summary tables (`grid summary`, the closing tables of `grid run`) at 80 and 120 columns: the
labels, the figures and VALID / INVALID come out whole, one row a line; what does not fit is
left out by name (issue 31)."""

import io

import pytest
from rich.console import Console

from analysis.load import anchor_runs
from analysis.summary import _fmt, latest_cells, render, render_repeats
from store.read import connect

# The demo's names are longer than the synthetic store's.
NAMES = {"mix": "code_complete", "chat": "chat_bench", "llama31_8b": "smollm2_135m_it"}


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first rich table in `text`, continuation lines joined to their row."""
    rows: list[list[str]] = []
    in_body = False
    for line in text.splitlines():
        if line.startswith("┡"):
            in_body = True
        elif line.startswith("└") and in_body:
            break
        elif in_body and line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if rows and not cells[0]:  # a wrapped row's next line
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
    return rows


@pytest.fixture(scope="module")
def frame(synthetic_store):
    cells = latest_cells(synthetic_store)
    return cells.assign(model=cells["model"].replace(NAMES), corpus=cells["corpus"].replace(NAMES))


@pytest.mark.parametrize("width", [80, 120])
def test_cells_table_keeps_labels_tok_s_and_validity_whole(frame, width):
    console = Console(file=io.StringIO(), width=width)
    render(frame, console)
    text = console.file.getvalue()
    rows = table_rows(text)
    assert len(rows) == len(frame)
    assert all(len(line) <= width for line in text.splitlines())
    assert "…" not in text
    want = {
        (
            r.model,
            r.corpus,
            r.lever,
            str(r.k or "-"),
            _fmt(r.output_tok_per_s),
            "VALID" if r.valid else "INVALID",
        )
        for r in frame.itertuples()
    }
    # model, corpus, lever, K, out tok/s are the first five columns, valid the last, at any width.
    assert {(*row[:5], row[-1]) for row in rows} == want
    assert "INVALID" in {row[-1] for row in rows}
    if width == 80:
        assert "not shown at 80 columns: draft tok/draft" in " ".join(text.split())


@pytest.mark.parametrize("width", [80, 120])
def test_repeats_table_keeps_the_interval_and_its_label_whole(synthetic_store, frame, width):
    console = Console(file=io.StringIO(), width=width)
    render_repeats(frame, console, anchor_runs(connect(synthetic_store)))
    text = console.file.getvalue()
    rows = table_rows(text)
    assert all(len(line) <= width for line in text.splitlines()) and "…" not in text
    by_cell = {(r[0], r[1], r[2], r[3]): r for r in rows}
    best = by_cell[("smollm2_135m_it", "code_complete", "bestkpad", "8")]
    assert best[-2] == "1.580x [1.570, 1.590] 90% CI, n=3/3 paired" and best[-1] == "real gain"
    assert by_cell[("qwen25_7b", "code_complete", "suffix", "8")][-1] == "within noise"

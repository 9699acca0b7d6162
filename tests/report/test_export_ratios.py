"""Issue 38 item 3: no export prints a ratio without its n, its interval and its verdict beside it.

Every export is scanned: `grid summary format=csv|json|md`, `grid compare format=csv|json|md` and the
HTML report's tables. Each column that holds a ratio (by its name) must have companions in the same
table: an n, a low and a high end of its interval, and a verdict (or label).
"""

import io
import json
import re
from html.parser import HTMLParser

import pandas as pd
import pytest

from analysis.html_report import render_report
from analysis.study import load_study
from analysis.summary import export, latest_cells
from grid.__main__ import main
from tests.unit.analysis.launch_store import write_store
from tests.unit.grid.cli.test_compare import SA, SB, write_side

RATIO = re.compile(r"(^|_)(ratio|speedup_vs_van|x_van|x|rel_diff)$")


def missing_companions(columns: list[str]) -> list[str]:
    """'<ratio column>: no <what>' for each ratio column lacking a companion in `columns`."""
    problems = []
    for name in columns:
        match = RATIO.search(name)
        if not match:
            continue
        prefix = name[: match.start(2)]

        def has(*forms: str, name: str = name, prefix: str = prefix) -> bool:
            return any(c in columns for f in forms for c in (f"{name}_{f}", f"{prefix}{f}"))

        n = any(c.startswith((f"{name}_n", f"{prefix}n_")) or c == f"{prefix}n" for c in columns)
        for what, ok in (("n", n), ("ci_lo", has("ci_lo")), ("ci_hi", has("ci_hi")),
                         ("verdict", has("verdict", "label"))):  # fmt: skip
            if not ok:
                problems.append(f"{name}: no {what}")
    return problems


def test_the_scan_catches_a_bare_ratio():
    assert missing_companions(["model", "speedup_vs_van"]) == [
        "speedup_vs_van: no n", "speedup_vs_van: no ci_lo", "speedup_vs_van: no ci_hi",
        "speedup_vs_van: no verdict",
    ]  # fmt: skip
    assert missing_companions(["confirmed_x", "confirmed_n", "confirmed_ci_lo", "confirmed_ci_hi",
                               "confirmed_label"]) == []  # fmt: skip


@pytest.fixture(scope="module")
def launch_store(tmp_path_factory):
    return write_store(tmp_path_factory.mktemp("launches") / "store")


@pytest.mark.parametrize("fmt", ["csv", "json", "md"])
def test_summary_exports_carry_n_interval_and_verdict_beside_each_ratio(synthetic_store, launch_store, fmt):
    for store in (synthetic_store, launch_store):
        out = io.StringIO()
        export(latest_cells(store), fmt, out)
        text = out.getvalue()
        if fmt == "csv":
            tables = [list(pd.read_csv(io.StringIO(text)).columns)]
        elif fmt == "json":
            document = json.loads(text)
            tables = [list(rows[0]) for key, rows in document.items() if key != "left_out" and rows]
        else:
            tables = [[h.strip() for h in line.strip("|").split("|")] for line in text.splitlines()
                      if line.startswith("| ") and not line.startswith("| " + "-")]  # fmt: skip
            tables = [t for t in tables if "model" in t]  # header rows
        for columns in tables:
            assert missing_companions(columns) == [], (fmt, columns)


def test_a_cell_ratio_says_one_pair_and_not_judged(synthetic_store):
    out = io.StringIO()
    export(latest_cells(synthetic_store), "json", out)
    cells = json.loads(out.getvalue())["cells"]
    best = next(c for c in cells if c["lever"] == "bestkpad" and c["k"] == 8 and c["corpus"] == "mix")
    assert best["speedup_vs_van_n"] == 1 and best["speedup_vs_van_ci_lo"] is None
    assert best["speedup_vs_van_verdict"].startswith("not judged (n<2)")
    assert best["x_van_label"] == "real gain" and best["x_van_n"] == 3
    assert best["x_van_ci_lo"] < best["x_van"] < best["x_van_ci_hi"]
    van = next(c for c in cells if c["lever"] == "van")
    assert van["x_van"] is None and van["speedup_vs_van_verdict"] is not None  # van / van is one pair too


@pytest.mark.parametrize("fmt", ["csv", "json", "md"])
def test_compare_exports_carry_n_interval_and_verdict(tmp_path, capsys, fmt):
    write_side(tmp_path / "a", SA, 1.0)
    write_side(tmp_path / "b", SB, 1.2)
    assert main(["compare", f"stores=[{tmp_path / 'a'},{tmp_path / 'b'}]", f"format={fmt}"]) == 0
    text = capsys.readouterr().out
    if fmt == "csv":
        columns = list(pd.read_csv(io.StringIO(text)).columns)
    elif fmt == "json":
        columns = list(json.loads(text)["rows"][0])
    else:
        header = next(line for line in text.splitlines() if line.startswith("| model"))
        columns = [h.strip() for h in header.strip("|").split("|")]
    assert "ratio" in columns and missing_companions(columns) == []


class _Tables(HTMLParser):
    """Each <table>'s header texts."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[str]] = []
        self._in_th = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        self._in_th = tag == "th" or (self._in_th and tag != "td")

    def handle_endtag(self, tag):
        if tag == "th":
            self._in_th = False

    def handle_data(self, data):
        if self._in_th and self.tables and data.strip():
            self.tables[-1].append(data.strip())


def report_ratio_problems(page: str) -> list[str]:
    """For each report table: a header that names a ratio ('x over van', 'ratio', 'rel_diff') needs an
    n, an interval and a label or verdict in the same table."""
    parser = _Tables()
    parser.feed(page)
    problems = []
    for headers in parser.tables:
        lowered = [h.lower() for h in headers]
        if not any(("x over van" in h or re.search(r"\bratio\b", h) or h == "rel_diff") for h in lowered):
            continue
        if not any(h == "n" or h.startswith("n ") or h.startswith("n_") or " n" in h or "blocks" in h
                   for h in lowered):  # fmt: skip
            problems.append(f"no n in {headers}")
        if not any("ci" in h.split() or "ci_lo" in h or "[" in h for h in lowered):
            problems.append(f"no interval in {headers}")
        if not any("verdict" in h or "label" in h for h in lowered):
            problems.append(f"no verdict in {headers}")
    return problems


def test_every_report_table_with_a_ratio_has_its_companions(synthetic_store, launch_store):
    for store in (synthetic_store, launch_store):
        page = render_report(load_study(store), "ratios")
        assert report_ratio_problems(page) == []
    assert report_ratio_problems("<table><tr><th>x over van</th></tr></table>") != []


def test_each_interval_says_which_noise_terms_it_carries(synthetic_store, tmp_path, capsys):
    out = io.StringIO()
    export(latest_cells(synthetic_store), "json", out)
    best = next(c for c in json.loads(out.getvalue())["cells"] if c["lever"] == "bestkpad" and c["k"] == 8)
    assert best["x_van_noise_terms"] == "launch+block"  # paired within one session
    write_side(tmp_path / "a", SA, 1.0)
    write_side(tmp_path / "b", SB, 1.2)
    assert main(["compare", f"stores=[{tmp_path / 'a'},{tmp_path / 'b'}]", "format=json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["noise_terms"] for r in rows} == {"launch+block+session"}  # two sessions, unpaired
    page = render_report(load_study(synthetic_store), "t")
    assert "<th>selection interval carries</th>" in page and "<td>launch+block</td>" in page


def test_the_console_cells_table_says_one_pair_is_not_judged(synthetic_store):
    from rich.console import Console

    from analysis.summary import render

    out = io.StringIO()
    render(latest_cells(synthetic_store), Console(file=out, width=250))
    text = out.getvalue()
    assert "│ 1.20 n=1 not judged │" in text  # bestkpad K4 on chat over van, repeat 0: one pair

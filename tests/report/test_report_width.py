"""Issue 47: Table 1 fits a 1280 px window. A real headless browser lays the page out at 1280 px and
measures Table 1 (#table1): no part of it reaches past the window's right edge, and the page has no
horizontal scroll because of it."""

import html
import json
import re
import subprocess

from analysis.html_report import render_report
from analysis.study import load_study
from store.layout import StoreLayout
from tests.report.test_report_page import BROWSER_FLAGS
from tests.unit.analysis import synthetic_store
from tests.unit.analysis.synthetic_store import S1, build_store, write_cell
from tests.unit.analysis.test_confirmation import S3, record, write_confirmation

WINDOW = 1280
# Runs in the page once it is parsed: the layout's figures, written where --dump-dom shows them.
MEASURE = """<script>
const view = document.documentElement.clientWidth;
const block = document.getElementById('table1');
const tables = [...block.querySelectorAll('table')].map(t => {
  const box = t.getBoundingClientRect();
  return {left: box.left, right: box.right, scroll: t.scrollWidth, columns: t.rows[0].cells.length};
});
document.body.setAttribute('data-measured', JSON.stringify({
  view: view, page: document.documentElement.scrollWidth,
  block: {right: block.getBoundingClientRect().right, scroll: block.scrollWidth}, tables: tables,
}));
</script></body>"""


def measured(chromium, page_html, folder):
    """The layout of `page_html` at a WINDOW px wide window, as MEASURE reads it."""
    page = folder / "page.html"
    page.write_text(page_html.replace("</body>", MEASURE), encoding="utf-8")
    argv = [chromium, *BROWSER_FLAGS, f"--window-size={WINDOW},900", "--dump-dom", page.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=folder)
    found = re.search(r'data-measured="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def crowded_study(root, monkeypatch):
    """The synthetic store with every Table 1 column filled: a held-out figure at low power, an INVALID
    van cell on each side (the longest words the table holds), and the selection's intervals."""
    van = (S1, "llama31_8b", "mix", "van", 0, 0, 99.0, True)
    monkeypatch.setattr(
        synthetic_store, "CELLS", [(*c[:7], False) if c == van else c for c in synthetic_store.CELLS]
    )
    store = build_store(root)
    keys = write_confirmation(store, (118.0, 106.0, 114.0))
    summary = {"model": "llama31_8b", "corpus": "mix", "lever": "van", "k": 0, "repeat": 0,
               "output_tok_per_s": 60.0, "valid": False}  # fmt: skip
    write_cell(StoreLayout(store), S3, 400, keys[3], summary)
    return load_study(store, confirmation_record=record(keys))


def test_table1_fits_a_1280_px_window(chromium, tmp_path, monkeypatch):
    study = crowded_study(tmp_path / "store", monkeypatch)
    table = study.table1
    llama = table.set_index("model").loc["llama31_8b"]
    assert llama[["confirmed_power", "confirmed_invalid_left_out", "invalid_left_out"]].notna().all()
    layout = measured(chromium, render_report(study, "t"), tmp_path)
    view = layout["view"]
    assert view <= WINDOW and layout["tables"], layout
    # Every column of Table 1 is on the page (the model column once per part).
    assert sum(t["columns"] for t in layout["tables"]) >= len(table.columns)
    for part in layout["tables"]:
        assert part["left"] >= 0 and part["right"] <= view and part["scroll"] <= view, layout
    assert layout["block"]["right"] <= view and layout["block"]["scroll"] <= view, layout
    assert layout["page"] <= view, layout  # nothing else on the page scrolls sideways either

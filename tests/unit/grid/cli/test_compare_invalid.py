"""Issue 47 item 5 in `grid compare`: an INVALID cell left out of a side's median is named on the
configuration's own row (table, JSON, CSV, md), and a configuration with no VALID cell on a side says so."""

import io
import json

import pandas as pd
from rich.console import Console

from grid.__main__ import main
from grid.cli.compare import compare_command
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_anchor, write_cell
from tests.unit.grid.cli.test_compare import SA, SB, write_side


def spoil(root, session, lever, repeats, n0=200):
    """Write INVALID cells of `lever` on llama31_8b/mix (repeats `repeats`) into one side's store: the
    latest attempt of the cell with the same key as write_side's, so it replaces the VALID one."""
    layout = StoreLayout(root)
    k = {"van": 0, "bestkpad": 8, "suffix": 8}[lever]
    for i, repeat in enumerate(repeats):
        summary = {"model": "llama31_8b", "corpus": "mix", "lever": lever, "k": k, "repeat": repeat,
                   "output_tok_per_s": 10.0, "valid": False,
                   "invalid_reasons": "concurrency held 40% < 90%"}  # fmt: skip
        write_cell(layout, session, n0 + i, f"{session[-6:]}-{lever}-{repeat}", summary)


def stores(tmp_path):
    """A: van's repeat 0 INVALID; B: every suffix cell INVALID (A has no suffix): the rest VALID."""
    before, after = tmp_path / "before", tmp_path / "after"
    write_side(before, SA, 1.0)
    write_side(after, SB, 1.2, extra=True)
    spoil(before, SA, "van", [0])
    spoil(after, SB, "suffix", [0, 1, 2])
    return before, after


def test_json_and_csv_name_the_invalid_cell_left_out_on_its_row(tmp_path, capsys):
    before, after = stores(tmp_path)
    assert main(["compare", f"stores=[{before},{after}]", "format=json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {row["lever"]: row for row in out["rows"]}
    # The INVALID repeat is not in A's median, and the row says so.
    assert rows["van"]["n_a"] == 2
    assert rows["van"]["invalid_left_out"] == "1 of 3 A cells INVALID, left out of the ratio"
    assert rows["bestkpad"]["invalid_left_out"] is None
    # B's suffix is all INVALID: not silently "only in B", but why there is no ratio.
    assert out["only_one_side"] == [
        "no VALID cell on either side: llama31_8b/mix/suffix/8; all 3 B cells INVALID, left out of the ratio"
    ]
    assert main(["compare", f"stores=[{before},{after}]", "format=csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    flags = dict(zip(table["lever"], table["invalid_left_out"], strict=True))
    assert flags["van"] == "1 of 3 A cells INVALID, left out of the ratio" and pd.isna(flags["bestkpad"])


def test_the_table_and_md_say_it_beside_the_verdict(tmp_path, capsys):
    before, after = stores(tmp_path)
    console = Console(record=True, width=200)
    assert compare_command([f"stores=[{before},{after}]"], console) == 0
    text = console.export_text()
    van = " ".join(line for line in text.splitlines() if " van " in line or line.startswith("│ llama31_8b"))
    assert "1 of 3 A cells INVALID, left out of the" in van, text
    assert "no VALID cell on either side: llama31_8b/mix/suffix/8; all 3 B cells INVALID" in text
    assert main(["compare", f"stores=[{before},{after}]", "format=md"]) == 0
    md = capsys.readouterr().out
    row = next(line for line in md.splitlines() if "| van |" in line)
    assert "| 1 of 3 A cells INVALID, left out of the ratio |" in row


def test_a_side_whose_cells_of_a_configuration_are_all_invalid_says_so_on_its_only_in_line(tmp_path, capsys):
    """B measured bestkpad VALID, A only INVALID: 'only in B' names A's INVALID cells."""
    before, after = tmp_path / "before", tmp_path / "after"
    write_side(before, SA, 1.0)
    write_side(after, SB, 1.2)
    spoil(before, SA, "bestkpad", [0, 1, 2])
    write_anchor(StoreLayout(before), SA, 300, "end", 101.0)
    assert main(["compare", f"stores=[{before},{after}]", "format=json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["only_one_side"] == [
        f"only in {after}: llama31_8b/mix/bestkpad/8; all 3 A cells INVALID, left out of the ratio"
    ]

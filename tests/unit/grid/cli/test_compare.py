"""Issue 31: `grid compare` puts two stores (or two sessions of one) side by side, judged by the rule."""

import json

import pytest
from rich.console import Console

from grid.__main__ import main
from grid.cli.compare import compare_command
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_anchor, write_cell
from vocab.errors import ConfigError

SA, SB = "20260101T000000Z-aaaaaa", "20260201T000000Z-bbbbbb"


def write_side(root, session, bestkpad_scale, extra=False):
    """van and bestkpad K8 on llama31_8b/mix, 3 repeats each, and the session's drift anchors."""
    layout = StoreLayout(root)
    n = 0
    values = {"van": (100.0, 101.0, 99.0), "bestkpad": (150.0, 152.0, 148.0)}
    for lever, k in (("van", 0), ("bestkpad", 8), *((("suffix", 8),) if extra else ())):
        for repeat, tok_s in enumerate(values.get(lever, (120.0, 121.0, 119.0))):
            tok_s *= bestkpad_scale if lever == "bestkpad" else 1.0
            summary = {"model": "llama31_8b", "corpus": "mix", "lever": lever, "k": k, "repeat": repeat,
                       "output_tok_per_s": tok_s}  # fmt: skip
            write_cell(layout, session, n, f"{session[-6:]}-{lever}-{repeat}", summary)
            n += 1
    write_anchor(layout, session, 100, "start", 100.0)
    write_anchor(layout, session, 101, "end", 101.0)


def test_two_stores_side_by_side_name_the_real_gain_and_the_noise(tmp_path, capsys):
    write_side(tmp_path / "before", SA, 1.0)
    write_side(tmp_path / "after", SB, 1.2, extra=True)
    assert main(["compare", f"stores=[{tmp_path / 'before'},{tmp_path / 'after'}]", "format=json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {row["lever"]: row for row in out["rows"]}
    assert rows["bestkpad"]["ratio"] == pytest.approx(1.2)
    assert rows["bestkpad"]["label"] == "real gain"
    assert rows["van"]["ratio"] == pytest.approx(1.0) and rows["van"]["label"] == "within noise"
    assert out["only_one_side"] == [f"only in {tmp_path / 'after'}: llama31_8b/mix/suffix/8"]


def test_two_sessions_of_one_store_give_the_same_answer_as_a_table(tmp_path):
    write_side(tmp_path, SA, 1.0)
    write_side(tmp_path, SB, 1.2)
    console = Console(record=True, width=200)
    assert compare_command([f"sessions=[{SA},{SB}]", f"paths.store={tmp_path}"], console) == 0
    out = console.export_text()
    assert f"A = {SA}" in out and f"B = {SB}" in out
    line = next(ln for ln in out.splitlines() if "bestkpad" in ln)
    assert "1.200" in line and "real gain" in line


def test_bad_arguments_are_one_line_before_anything_is_read(tmp_path):
    with pytest.raises(ConfigError, match="stores=\\[A,B\\]"):
        compare_command([f"paths.store={tmp_path}"])
    with pytest.raises(ConfigError, match="takes two values, got 3"):
        compare_command(["stores=[a,b,c]"])
    write_side(tmp_path, SA, 1.0)
    with pytest.raises(ConfigError, match="session 'nope' has no measured cell"):
        compare_command(["sessions=[nope,20260101T000000Z-aaaaaa]", f"paths.store={tmp_path}"])


def test_md_is_a_pipe_table_with_every_value_whole(tmp_path, capsys):
    write_side(tmp_path / "before", SA, 1.0)
    write_side(tmp_path / "after", SB, 1.2, extra=True)
    assert main(["compare", f"stores=[{tmp_path / 'before'},{tmp_path / 'after'}]", "format=md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("| model |"))
    # SIDE_COLUMNS, noise_terms, also_differs and invalid_left_out included
    assert lines[header + 1] == "|" + "---|" * 17
    bestkpad = next(ln for ln in lines if "| bestkpad |" in ln)
    assert bestkpad.count("|") == 18 and "| real gain |" in bestkpad
    assert lines[-1] == f"- only in {tmp_path / 'after'}: llama31_8b/mix/suffix/8"


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_keeps_names_ratio_and_verdict_whole(tmp_path, width):
    write_side(tmp_path, SA, 1.0)
    write_side(tmp_path, SB, 1.2)
    console = Console(record=True, width=width)
    compare_command([f"sessions=[{SA},{SB}]", f"paths.store={tmp_path}"], console)
    text = console.export_text()
    table = text[text.index("B against A") :]
    assert "…" not in table and all(len(line) <= width for line in table.splitlines())
    assert "bestkpad" in table and "1.200" in table and "real gain" in table and "llama31_8b" in table

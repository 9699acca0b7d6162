"""vocab/console.py: one width in a log, and tables that drop columns rather than cut values."""

import io

from rich.console import Console

from vocab.console import LOG_WIDTH, Col, console_width, fit_table, make_console, print_table


def rendered(width, columns, rows, drop=()):
    console = Console(file=io.StringIO(), width=width)
    left_out = print_table(console, "t", columns, rows, drop)
    return console.file.getvalue(), left_out


def test_a_log_gets_the_stated_width_and_columns_overrides_it(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert console_width(io.StringIO()) == LOG_WIDTH == make_console(io.StringIO()).width
    monkeypatch.setenv("COLUMNS", "150")
    assert console_width(io.StringIO()) == 150


def test_columns_are_dropped_in_order_and_named_until_the_table_fits():
    columns = [Col("label", "left"), Col("a long header", no_wrap=False), Col("figure"), Col("valid")]
    rows = [["model/lever/corpus/r0", "1,234,567.8", "9,876.5", "INVALID"]]
    text, left_out = rendered(50, columns, rows, drop=["a long header", "figure"])
    assert left_out == ["a long header"]
    assert "not shown at 50 columns: a long header" in text
    assert all(len(line) <= 50 for line in text.splitlines()[:6])
    for value in ("model/lever/corpus/r0", "9,876.5", "INVALID"):
        assert value in text
    assert "…" not in text


def test_a_table_too_wide_even_without_its_droppable_columns_keeps_every_value_whole():
    columns = [Col("label", "left"), Col("valid")]
    rows = [["a-very-long-label-that-cannot-fit-in-thirty-columns", "VALID"]]
    table, left_out = fit_table(30, "t", columns, rows)
    console = Console(file=io.StringIO(), width=30)
    console.print(table, crop=False)
    text = console.file.getvalue()
    assert (
        left_out == [] and "a-very-long-label-that-cannot-fit-in-thirty-columns" in text and "VALID" in text
    )


def test_free_text_wraps_at_words_and_folds_a_long_one():
    columns = [Col("cell", "left"), Col("last error", "left", no_wrap=False, fold=True)]
    rows = [
        ["tiny/van/chat/r0", "engine died: /a/very/long/path/to/the/engine/log/file/that/is/one/word.log"]
    ]
    text, _ = rendered(40, columns, rows)
    assert all(len(line) <= 40 for line in text.splitlines())
    assert text.count("tiny/van/chat/r0") == 1 and "engine died:" in text


def test_values_are_plain_text_not_markup():
    text, _ = rendered(80, [Col("error", "left", no_wrap=False)], [["[red]not a tag[/] [1.5, 2.0]"]])
    assert "[red]not a tag[/] [1.5, 2.0]" in text

"""`python -m grid`'s help, and the exports `summary format=json|csv`, `status format=json` (issue 31)."""

import csv
import io
import json
import re

import pytest
from rich.console import Console

from analysis.summary import EXPORT_COLUMNS, latest_cells
from grid.__main__ import COMMANDS, DOC_PAGES, main
from grid.cli.status import status
from tests.unit.analysis.synthetic_store import build_store
from tests.unit.grid.cli.test_status_integrity import damaged_store
from vocab.paths import project_path


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory):
    """The hand-made store of tests/unit/analysis/synthetic_store.py (read-only here)."""
    return build_store(tmp_path_factory.mktemp("store"))


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_a_help_that_names_its_docs_section(command, flag, capsys):
    assert main([command, "experiment=smoke", flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m grid {command}")
    section = COMMANDS[command].readme
    page = DOC_PAGES[section]
    assert f"{page}, section '{section}'" in out and "config keys" in out
    # The section exists and shows the command.
    assert f"grid {command}" in readme_section(section, page), f"{page} section '{section}' never shows it"


def readme_section(heading: str, page: str = "README.md") -> str:
    """`page`'s text under `heading` (its subsections included), up to the next heading as high."""
    text = project_path(page).read_text()
    found = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, re.M)
    assert found, f"{page} has no heading '{heading}'"
    rest = text[found.end() :]
    end = re.search(rf"^#{{1,{len(found.group(1))}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def test_grid_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("run", "status", "plan", "simulate", "summary", "corpus", "confirm", "report"):
        assert f"\n  {command} " in out


def test_an_option_is_not_taken_for_an_override(capsys):
    assert main(["run", "--dry-run"]) == 2
    assert "unknown option '--dry-run' for run" in capsys.readouterr().err


def test_tune_help(capsys):
    from experiments.tune import main as tune_main

    assert tune_main(["model=tiny", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m experiments.tune") and "confirm_repeats" in out


def test_summary_json(synthetic_store, capsys):
    assert main(["summary", f"paths.store={synthetic_store}", "format=json"]) == 0
    data = json.loads(capsys.readouterr().out)
    frame = latest_cells(synthetic_store)
    assert len(data["cells"]) == len(frame) and data["left_out"] == []
    assert set(data["cells"][0]) == set(EXPORT_COLUMNS)
    by_label = {c["label"]: c for c in data["cells"]}
    cell = by_label["llama31_8b/bestkpad-k8/mix/r0"]
    assert cell["output_tok_per_s"] == 157.0 and cell["valid"] is True and cell["ttft_ms_p50"] is None
    assert by_label["llama31_8b/suffix-k8/mix/r3"]["valid"] is False
    assert not any(label.endswith("anchor-start") for label in by_label)


def test_summary_csv_has_a_header_and_a_row_per_cell(synthetic_store, capsys):
    assert main(["summary", f"paths.store={synthetic_store}", "format=csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(latest_cells(synthetic_store))
    assert list(rows[0]) == EXPORT_COLUMNS
    assert len({row["cell_key"] for row in rows}) == len(rows)
    assert {row["valid"] for row in rows} == {"True", "False"}


def test_an_unknown_format_is_one_line(synthetic_store, capsys):
    assert main(["summary", f"paths.store={synthetic_store}", "format=xml"]) == 2
    assert capsys.readouterr().err == "error: format must be table, json, csv or md, got 'xml'\n"


def test_summary_md_is_a_row_per_cell_with_the_verdict_whole(synthetic_store, capsys):
    assert main(["summary", f"paths.store={synthetic_store}", "format=md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| " + " | ".join(EXPORT_COLUMNS) + " |"
    rows = [ln for ln in lines[2:] if ln.startswith("| ")]
    assert len(rows) == len(latest_cells(synthetic_store))
    assert all(row.count("|") == len(EXPORT_COLUMNS) + 1 for row in rows)
    assert any("concurrency held 40% < 90%" in row for row in rows)


def test_status_json(tmp_path, capsys):
    hurt, _ = damaged_store(tmp_path)
    assert main(["status", "experiment=smoke", f"paths.store={tmp_path}", "format=json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == "smoke"
    assert (
        data["counts"]["done"] == 1 and data["counts"]["damaged"] == 1 and data["counts"]["interrupted"] == 1
    )
    assert data["counts"]["cells"] == len(data["cells"])
    statuses = {c["label"]: c["status"] for c in data["cells"]}
    assert statuses[hurt.label] == "damaged"
    assert any(hurt.key in problem for problem in data["problems"])


@pytest.mark.parametrize("width", [80, 120])
def test_status_table_keeps_labels_and_statuses_whole(tmp_path, width):
    damaged_store(tmp_path)
    console = Console(file=io.StringIO(), width=width)
    status(["experiment=smoke", f"paths.store={tmp_path}", "grid.repeats=3"], console)
    text = console.file.getvalue()
    table = text[text.index("cells not done") :]
    assert "…" not in table and all(len(line) <= width for line in table.splitlines())
    body = [line for line in table.splitlines() if line.startswith("│")]
    labels = [line.strip("│").split("│")[0].strip() for line in body]
    assert all(label.count("/") == 3 for label in labels if label)
    assert "interrupted" in table and "damaged" in table and "driver stopped" in table


def test_each_commands_help_lists_the_keys_of_the_sections_it_reads(capsys):
    """Issue 31: the keys come from the schema, so a key added there shows in `--help` at once;
    issue 47: each with its meaning (the first sentence of its comment in vocab/schema.py)."""
    from dataclasses import fields

    from grid.__main__ import COMMANDS
    from vocab.cli_reference import first_sentence
    from vocab.schema import LoadSpec, RunConfig

    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # unwrapped
    assert "load.max_tokens Most output tokens per request" in out
    assert "run.keep_invalid A cell measured INVALID (a validity gate failed) runs again on resume" in out
    for schema, section in ((LoadSpec, "load"), (RunConfig, "run")):
        assert all(f" {section}.{f.name} " in out for f in fields(schema)), section
    assert first_sentence(LoadSpec.__doc__ or "") in out
    for name, command in COMMANDS.items():
        assert main([name, "--help"]) == 0
        text = capsys.readouterr().out
        assert "keys it reads (section.key=value" in text
        assert all(f"\n  {section}: " in text for section in command.sections), name

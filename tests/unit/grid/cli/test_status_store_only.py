"""Issue 31: `status` given only `paths.store` describes what the store holds, not the default grid."""

import json

from rich.console import Console

from grid.__main__ import main
from grid.cli.status import status
from grid.config.compose import compose_config, names_a_grid
from grid.config.expand import expand, to_config
from store.layout import StoreLayout
from store.writer import write_failed_attempt, write_ok_attempt
from tests.unit.store.test_writer_read import records, tags

# A user's own corpus: none of its cells is in the default (smoke) grid.
OWN = ["grid.corpora=[mine]", "+corpus.mine.path=/data/mine.jsonl", "grid.levers=[van,suffix]"]


def own_store(root):
    """Two measured cells of the user's grid, one failed; a drift anchor run beside them."""
    cells = expand(to_config(compose_config(["experiment=smoke", *OWN, "grid.anchor.enabled=false"])))
    layout = StoreLayout(root)
    measured, failed = cells[0], cells[1]
    summary = {**measured.as_record(), "valid": True, "output_tok_per_s": 1.0}
    write_ok_attempt(layout, tags(measured.key, "s1-a1"), records(3), summary, label=measured.label)
    write_failed_attempt(layout, tags(failed.key, "s1-a2"), "engine exited", "", label=failed.label)
    anchor = {**summary, "anchor": "start"}
    write_ok_attempt(
        layout, tags("anchorkey", "s1-a3"), records(3), anchor, label="tiny/van/mine/r0/anchor-start"
    )
    return measured, failed


def test_only_a_store_gives_its_cells_by_label_and_no_pending(tmp_path):
    _, failed = own_store(tmp_path)
    console = Console(record=True, width=300)
    assert status([f"paths.store={tmp_path}"], console) == 0
    out = console.export_text()
    assert "(all it holds; experiment=... for a grid's): 2 cells: done 1," in out
    assert "; 1 anchor run: done 1" in out  # counted apart, as run counts it
    assert "failed 1," in out and "pending" not in out
    assert failed.label in out and "engine exited" in out
    assert "anchor-start" not in out


def test_an_experiment_still_describes_its_grid(tmp_path):
    own_store(tmp_path)
    console = Console(record=True, width=300)
    status(["experiment=smoke", f"paths.store={tmp_path}"], console)
    out = console.export_text()
    assert "experiment smoke: 4 cells: done 0," in out and "pending 4" in out


def test_json_of_a_store_has_no_experiment_and_every_cell(tmp_path, capsys):
    measured, failed = own_store(tmp_path)
    assert main(["status", f"paths.store={tmp_path}", "format=json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["experiment"] is None
    assert {c["label"]: c["status"] for c in record["cells"]} == {
        measured.label: "done",
        failed.label: "failed",
    }


def test_which_overrides_name_a_grid():
    assert names_a_grid(["experiment=final"])
    assert names_a_grid(["grid.levers=[van]"]) and names_a_grid(["+corpus.mine.path=/x.jsonl"])
    assert not names_a_grid(["paths.store=/data/results", "run.keep_invalid=true"])


def test_csv_and_md_give_every_cell_one_row(tmp_path, capsys):
    import csv
    import io

    measured, failed = own_store(tmp_path)
    assert main(["status", f"paths.store={tmp_path}", "format=csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["label"]: r["status"] for r in rows} == {measured.label: "done", failed.label: "failed"}
    assert main(["status", f"paths.store={tmp_path}", "format=md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| label | key | status | attempts | last_error |" and len(lines) == 4

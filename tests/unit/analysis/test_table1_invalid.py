"""Issue 47 item 5 in Table 1 and the report: the INVALID cells left out of a model's x over van (the
selection's and the held-out one) are named on the model's own row, in the words the summary uses."""

from analysis.html_report import render_report
from analysis.study import load_study
from store.layout import StoreLayout
from tests.unit.analysis import synthetic_store
from tests.unit.analysis.synthetic_store import S1, build_store, write_cell
from tests.unit.analysis.test_confirmation import S3, record, write_confirmation

VAN_R0 = (S1, "llama31_8b", "mix", "van", 0, 0, 99.0, True)
FLAG = "1 of 3 van cells INVALID, left out of the ratio"


def invalid_van_store(root, monkeypatch):
    """The synthetic store with llama31_8b's mix van repeat 0 INVALID (bestkpad K=8 stays its final lever)."""
    cells = [(*c[:7], False) if c == VAN_R0 else c for c in synthetic_store.CELLS]
    monkeypatch.setattr(synthetic_store, "CELLS", cells)
    return build_store(root)


def test_table1_names_the_invalid_van_cell_left_out_of_the_selections_figure(tmp_path, monkeypatch):
    study = load_study(invalid_van_store(tmp_path / "store", monkeypatch))
    table = study.table1.set_index("model")
    llama = table.loc["llama31_8b"]
    assert llama["final_lever"] == "bestkpad K=8" and llama["n_reference"] == 2  # van's r0 is left out ...
    assert llama["invalid_left_out"] == FLAG  # ... and its row says so
    # qwen25_7b's cells are all VALID; llama31_8b's INVALID suffix cell is of no configuration in its ratio.
    assert table.loc["qwen25_7b", "invalid_left_out"] is None
    page = render_report(study, "t")
    assert f"<td>{FLAG}</td>" in page and "selection: INVALID cells left out" in page
    # The answer in words carries it too.
    answer = next(item for item in page.split("<li>") if "selection (reads high): llama31_8b" in item)
    assert FLAG in answer.split("<br>")[1]


def test_a_clean_store_flags_nothing(tmp_path):
    study = load_study(build_store(tmp_path / "store"))
    assert study.table1["invalid_left_out"].isna().all()
    assert "INVALID, left out of the ratio" not in render_report(study, "t")


def test_the_held_out_figure_names_its_invalid_cell_left_out(tmp_path):
    store = build_store(tmp_path / "store")
    keys = write_confirmation(store, (110.0, 111.5, 108.5))
    van_r0 = keys[3]  # write_confirmation: the lever's three cells, then van's
    summary = {"model": "llama31_8b", "corpus": "mix", "lever": "van", "k": 0, "repeat": 0,
               "output_tok_per_s": 60.0, "valid": False, "invalid_reasons": "stall 40 s"}  # fmt: skip
    write_cell(StoreLayout(store), S3, 400, van_r0, summary)  # a later attempt of that cell: INVALID
    study = load_study(store, confirmation_record=record(keys))
    llama = study.table1.set_index("model").loc["llama31_8b"]
    assert llama["confirmed_n"] == 2 and llama["confirmed_invalid_left_out"] == FLAG
    assert llama["invalid_left_out"] is None  # the selection's cells are all VALID
    page = render_report(study, "t")
    assert "held-out: INVALID cells left out" in page and f"<td>{FLAG}</td>" in page
    held_out = next(line for line in page.split("<li>") if line.startswith("held-out confirmation:"))
    assert FLAG in held_out.split("<br>")[0]

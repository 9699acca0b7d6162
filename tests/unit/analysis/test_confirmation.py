"""The held-out confirmation's figure beside the selection's (analysis/confirmation.py via analysis.study).

The synthetic store's llama31_8b selects bestkpad K=8 at 1.580x (synthetic_store.py); a third session
S3 measures it again, held out, with its own anchors (100 -> 101: band |ln 1.01| ~ 1.0 %).
"""

import json

import pytest

from analysis.study import load_study
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import LLAMA_SPEEDUP, build_store, write_anchor, write_cell

S3 = "20260103T000000Z-cccccc"
PLANNED = "bestkpad K=8 (mix:8)"


def write_confirmation(root, lever_tok_s, van_tok_s=(100.0, 101.0, 99.0), lever="bestkpad", k=8):
    layout = StoreLayout(root)
    keys = []
    rows = [(lever, k, r, v) for r, v in enumerate(lever_tok_s)] + [
        ("van", 0, r, v) for r, v in enumerate(van_tok_s)
    ]
    for n, (name, kk, repeat, tok_s) in enumerate(rows, start=200):
        key = f"k{n:03d}"
        keys.append(key)
        summary = {"model": "llama31_8b", "corpus": "mix", "lever": name, "k": kk, "repeat": repeat}
        summary |= {"output_tok_per_s": tok_s, "measured_prompt_hashes": '["h1", "h2", "h9"]'}
        write_cell(layout, S3, n, key, summary)
    for n, (position, tok_s) in enumerate((("start", 100.0), ("end", 101.0)), start=300):
        write_anchor(layout, S3, n, position, tok_s, corpus="mix")
    return keys


def record(keys, planned=PLANNED):
    return {"experiment": "t", "models": [{"model": "llama31_8b", "planned": planned, "cell_keys": keys}]}


@pytest.fixture
def store(tmp_path):
    return build_store(tmp_path / "store")


def test_a_real_held_out_gain_is_confirmed_beside_the_selections_figure(store):
    keys = write_confirmation(store, (110.0, 111.5, 108.5))
    study = load_study(store, confirmation_record=record(keys))
    table = study.table1.set_index("model")
    llama = table.loc["llama31_8b"]
    # The selection's figure is untouched: the confirmation's cells are held out of it.
    assert llama["speedup_vs_van"] == pytest.approx(LLAMA_SPEEDUP)
    assert not study.measured["cell_key"].isin(keys).any()
    assert llama["confirmed_x"] == pytest.approx((110 * 111.5 * 108.5 / (100 * 101 * 99)) ** (1 / 3))
    assert llama["confirmed_ci_lo"] > 1.01 and llama["confirmation"] == "confirmed"
    assert llama["confirmed_n"] == 3
    assert table.loc["qwen25_7b", "confirmation"] == "van: nothing to confirm"
    # All three of the confirmation's prompts differ from the synthetic selection's (none recorded there).
    assert study.confirmation.set_index("model").loc["llama31_8b", "confirmed_prompts_seen"] == 0.0


def test_a_held_out_figure_within_noise_is_not_confirmed(store):
    keys = write_confirmation(store, (100.5, 101.0, 99.8))
    llama = load_study(store, confirmation_record=record(keys)).table1.set_index("model").loc["llama31_8b"]
    assert llama["confirmation"] == "not confirmed" and llama["confirmed_label"] == "within noise"
    assert llama["speedup_vs_van"] == pytest.approx(LLAMA_SPEEDUP)  # the selection still reads 1.58x


def test_a_confirmation_of_another_configuration_is_stale_and_none_is_not_run(store, tmp_path):
    keys = write_confirmation(store, (110.0, 111.0, 109.0), lever="suffix")
    stale = load_study(store, confirmation_record=record(keys, "suffix K=8 (mix:8)")).table1
    words = stale.set_index("model").loc["llama31_8b", "confirmation"]
    assert words.startswith("stale: confirms suffix K=8 (mix:8), the study now selects bestkpad K=8 (mix:8)")
    assert stale["confirmed_x"].isna().all()
    fresh = build_store(tmp_path / "fresh")
    none = load_study(fresh).table1.set_index("model").loc["llama31_8b", "confirmation"]
    assert none.startswith("not run: python -m grid confirm")


def test_a_planned_confirmation_without_cells_says_so(store):
    study = load_study(store, confirmation_record=record(["never-measured"]))
    assert study.table1.set_index("model").loc["llama31_8b", "confirmation"].startswith("not measured yet")


def test_a_recorded_confirmations_cells_stay_out_of_every_whole_store_analysis(store):
    keys = write_confirmation(store, (300.0, 301.0, 299.0), van_tok_s=(10.0, 11.0, 9.0))
    path = StoreLayout(store).confirmation_file("final")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record(keys)))
    study = load_study(store)  # a notebook's read: no record passed
    assert not study.measured["cell_key"].isin(keys).any()
    assert study.table1.set_index("model").loc["llama31_8b", "speedup_vs_van"] == pytest.approx(LLAMA_SPEEDUP)

"""The whole analysis over the synthetic store (expectations in synthetic_store.py's docstring)."""

import pytest

from analysis.study import load_study, store_root_from_env
from tests.unit.analysis.synthetic_store import GEOMEAN, LLAMA_SPEEDUP, S1, S2
from vocab.paths import PROJECT_ROOT


def test_table1_from_the_store(synthetic_store):
    study = load_study(synthetic_store)
    assert study.excluded_invalid == 1
    table = study.table1.set_index("model")
    # tok/s: geometric means over the three VALID repeats (the INVALID 500 is left out)
    assert table.loc["llama31_8b", ["van_tok_per_s", "final_tok_per_s", "final_lever"]].tolist() == [
        pytest.approx((99 * 101 * 100) ** (1 / 3)),
        pytest.approx((157 * 159 * 158) ** (1 / 3)),
        "bestkpad K=8",
    ]
    assert table.loc["llama31_8b", "speedup_vs_van"] == pytest.approx(LLAMA_SPEEDUP)
    assert table.loc["llama31_8b", "label"] == "real gain"
    assert table.loc["llama31_8b", "ci_lo"] < LLAMA_SPEEDUP < table.loc["llama31_8b", "ci_hi"]
    assert table.loc["llama31_8b", ["n_value", "n_reference"]].tolist() == [3, 3]
    # suffix +1.5 % is within the 1.905 % band: no lever is a real gain, van stays
    # (before the one rule: suffix K=8, 1.015x, within drift)
    assert table.loc["qwen25_7b", "final_lever"] == "van"
    assert table.loc["qwen25_7b", "label"] == "within noise"
    assert study.speedup_geomean == pytest.approx(GEOMEAN)
    assert "1 INVALID cells left out (see their invalid_reasons)." in study.notes


def test_best_k_and_drift_from_the_store(synthetic_store):
    study = load_study(synthetic_store)
    best = study.best_k.set_index(["model", "corpus"])["best_k"].to_dict()
    assert best == {("llama31_8b", "chat"): 4, ("llama31_8b", "mix"): 8}
    drift = study.drift.set_index("session_id")["drift_rel"]
    assert drift[S1] == pytest.approx(2 / 101) and drift[S2] == pytest.approx(2 / 105)
    assert len(study.anchors) == 4 and study.measured["anchor"].isna().all()


def test_cell_keys_select_cells_and_their_sessions_anchors(synthetic_store):
    study = load_study(synthetic_store, cell_keys={"c012", "c013"})  # qwen mix van + suffix, S2
    assert set(study.measured["model"]) == {"qwen25_7b"}
    assert set(study.anchors["session_id"]) == {S2}


def test_store_root_from_env():
    assert store_root_from_env({}) == PROJECT_ROOT / "results"
    assert store_root_from_env({"LEVER_GRID_STORE": "/data/store"}).as_posix() == "/data/store"

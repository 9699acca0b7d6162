"""The whole analysis over the synthetic store (expectations in synthetic_store.py's docstring)."""

import pytest

from analysis.study import load_study, store_root_from_env
from grid.paths import PROJECT_ROOT
from tests.unit.analysis.synthetic_store import GEOMEAN, S1, S2


def test_table1_from_the_store(synthetic_store):
    study = load_study(synthetic_store)
    assert study.excluded_invalid == 1
    table = study.table1.set_index("model")
    assert table.loc["llama31_8b", ["van_tok_per_s", "final_tok_per_s", "final_lever"]].tolist() == [
        100.0, 158.0, "bestkpad K=8"
    ]  # fmt: skip
    assert table.loc["llama31_8b", "speedup_vs_van"] == pytest.approx(1.58)
    assert table.loc["llama31_8b", "beyond_drift"]
    assert table.loc["qwen25_7b", "final_lever"] == "suffix K=8"
    assert not table.loc["qwen25_7b", "beyond_drift"]
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

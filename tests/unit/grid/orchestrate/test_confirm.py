"""grid/orchestrate/confirm.py: what a held-out confirmation runs, and that it is apart from the selection."""

import json

import pandas as pd
import pytest

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.confirm import carried, confirm, plan_confirmations, read_record
from store.layout import StoreLayout
from vocab.errors import GridError

BASE = ["experiment=smoke", "load.seed=7"]


def final_row(model="tiny", lever="suffix", k_by_corpus="code_complete:8, chat_bench:8"):
    return {"model": model, "final_lever": lever, "final_label": f"{lever} K=8",
            "final_k_by_corpus": k_by_corpus, "speedup_vs_van": 1.2, "ci_lo": 1.1, "ci_hi": 1.3,
            "label": "real gain"}  # fmt: skip


def test_the_confirmation_measures_the_choice_and_van_on_a_new_seed_with_keys_of_its_own():
    [plan] = plan_confirmations(pd.DataFrame([final_row()]), [*BASE, "session_id=mine"])
    [argv] = plan.runs  # one K for both corpora: one run
    assert "session_id=mine" not in argv  # a session of its own
    cfg = to_config(compose_config(list(argv)))
    assert cfg.load.seed == 7 + 1000 and not cfg.grid.confirm.enabled
    assert cfg.grid.levers == ["van", "suffix"] and cfg.grid.ks == {"suffix": [8]}
    assert plan.planned == "suffix K=8 (code_complete:8, chat_bench:8)"
    cells = expand(cfg)
    assert set(plan.cell_keys) == {c.key for c in cells}
    # Same engines and load as the selection's cells except the prompt seed: no key is shared.
    selection = {c.key for c in expand(to_config(compose_config(BASE)))}
    assert not selection & set(plan.cell_keys)
    same = {(c.engine_spec.key, c.corpus.name, c.repeat) for c in cells}
    assert same == {
        (c.engine_spec.key, c.corpus.name, c.repeat) for c in expand(to_config(compose_config(BASE)))
    }


def test_a_k_per_corpus_gives_one_run_per_k_and_van_is_never_confirmed():
    final = pd.DataFrame([final_row(k_by_corpus="code_complete:4, chat_bench:8"), final_row("tiny2", "van")])
    [plan] = plan_confirmations(final, BASE)
    assert [("++grid.ks.suffix=[4]" in a, "++grid.ks.suffix=[8]" in a) for a in plan.runs] == [
        (True, False),
        (False, True),
    ]
    assert [a for a in plan.runs[0] if a.startswith("grid.corpora")] == ["grid.corpora=[code_complete]"]


def test_repeats_and_overrides_carried():
    [plan] = plan_confirmations(pd.DataFrame([final_row()]), [*BASE, "grid.confirm.repeats=4"])
    assert "grid.repeats=4" in plan.runs[0]
    assert carried(["grid.confirm.enabled=true", "+session_id=x", "load.seed=3"]) == ["load.seed=3"]


def test_confirm_writes_its_plan_before_it_runs_and_resumes_from_the_same_keys(tmp_path, monkeypatch):
    import grid.orchestrate.confirm as module

    monkeypatch.setattr(module, "plan_confirmations", lambda final, base: plan_confirmations(
        pd.DataFrame([final_row()]), base))  # fmt: skip
    ran = []

    def fake_run(argv):  # what grid.orchestrate.run.run would get; the record is already in the store
        ran.append(argv)
        assert read_record(tmp_path, "smoke")["models"][0]["planned"].startswith("suffix K=8")
        return 0

    assert confirm([*BASE, f"paths.store={tmp_path}"], run=fake_run) == 0
    assert len(ran) == 1
    first = read_record(tmp_path, "smoke")
    assert confirm([*BASE, f"paths.store={tmp_path}"], run=lambda argv: 1) == 1  # a failed run's code
    assert read_record(tmp_path, "smoke")["models"] == first["models"]


def test_a_damaged_record_is_one_error_naming_the_file_and_the_fix(tmp_path):
    path = StoreLayout(tmp_path).confirmation_file("smoke")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"models": [{"model": "tiny"}]}))
    with pytest.raises(GridError, match=r"confirmations/smoke\.json is damaged.*delete it and rerun"):
        read_record(tmp_path, "smoke")
    assert read_record(tmp_path, "other") is None


def test_plan_prices_the_confirmation_as_one_lever_and_van_per_model():
    from grid.cli.plan_report import confirm_cost
    from grid.plan.hours import gpu_hours_at

    overrides = [*BASE, "grid.confirm.enabled=true", "grid.confirm.repeats=3"]
    cost = confirm_cost(overrides, to_config(compose_config(overrides)))
    assert cost["corpus"] == "code_complete" and cost["repeats"] == 3 and cost["models"] == 1
    whole, _ = gpu_hours_at(overrides, 3)
    # One corpus of the two, van and one lever: less than the whole grid at the same repeats.
    assert 0 < cost["gpu_hours"] < whole


def test_a_sequential_runs_confirmation_is_measured_once_at_its_own_repeats():
    base = [*BASE, "grid.sequential.enabled=true", "grid.sequential.looks=[2,4]", "grid.confirm.repeats=3"]
    [plan] = plan_confirmations(pd.DataFrame([final_row()]), base)
    cfg = to_config(compose_config(list(plan.runs[0])))
    assert not cfg.grid.sequential.enabled and cfg.grid.repeats == 3
    assert len(plan.cell_keys) == 2 * 2 * 3  # {van, suffix} x 2 corpora x 3 repeats


def test_confirm_selects_on_the_cells_and_confidence_the_report_shows(tmp_path, monkeypatch):
    """Sequential looks: every repeat up to the cap, judged at Pocock's confidence (grid/cli/report.py)."""
    import analysis.study
    from analysis.sequential import pocock_confidence
    from grid.orchestrate.sequential import at_cap

    seen, real = {}, analysis.study.load_study

    def fake_load_study(root, cell_keys, confidence, **_):
        seen.update(keys=cell_keys, confidence=confidence)
        return real(root, cell_keys=cell_keys, confidence=confidence)

    monkeypatch.setattr(analysis.study, "load_study", fake_load_study)
    overrides = [
        *BASE,
        f"paths.store={tmp_path}",
        "grid.sequential.enabled=true",
        "grid.sequential.looks=[2,4]",
    ]
    assert confirm(overrides, run=lambda argv: 1) == 0  # an empty store: nothing to confirm
    assert seen["keys"] == {c.key for c in expand(at_cap(overrides))}
    assert max(c.repeat for c in expand(at_cap(overrides))) == 3
    assert seen["confidence"] == pytest.approx(pocock_confidence((2, 4))) and seen["confidence"] > 0.9

"""The tune ends with a confirmation run: the final configuration against van, new seeds, its own figure."""

import yaml
from rich.console import Console

from experiments.decide import LeverConfig
from experiments.tune import Tune, compose_tune, confirm, write_outputs
from grid.config.catalog import load_spec
from tests.unit.experiments.test_decide import drift, medians, verdicts
from vocab.schema import ModelSpec

CORPORA = ["code_complete", "chat_bench"]


class FakeTune(Tune):
    """Records the stages it is asked to run; the confirmation's evidence is given."""

    def __init__(self, cfg, evidence):
        super().__init__(cfg, load_spec(ModelSpec, "tiny"), "t1", Console(quiet=True), replay=True)
        self.runs: list[tuple[str, tuple[str, ...]]] = []
        self.given = evidence

    def run_stage(self, name, overrides):
        self.runs.append((name, tuple(overrides)))
        return {name}

    def evidence(self, keys=None):
        assert keys == {name for name, _ in self.runs}  # only the confirmation's own cells
        return self.given


def config(tmp_path):
    return compose_tune(["model=tiny", f"out_dir={tmp_path}"])


def test_a_van_final_needs_no_confirmation(tmp_path):
    t = FakeTune(config(tmp_path), None)
    assert confirm(t, LeverConfig.uniform("van", 0, CORPORA)) is None
    assert t.runs == [] and t.decisions[-1].decision == "skip"


def test_the_confirmation_runs_each_k_with_new_seeds_and_its_figure_is_reported(tmp_path):
    final = LeverConfig("bestkpad", (("code_complete", 4), ("chat_bench", 8)))
    figures = medians(
        [("code_complete", "van", 0, 100.0, "C"), ("chat_bench", "van", 0, 100.0, "C"),
         ("code_complete", "bestkpad", 4, 120.0, "C"), ("chat_bench", "bestkpad", 8, 118.0, "C")]
    )  # fmt: skip
    passed = verdicts(
        [("bestkpad", 4, "code_complete", "pass", "same"), ("bestkpad", 8, "chat_bench", "pass", "same")]
    )
    t = FakeTune(config(tmp_path), (figures, drift([("C", 0.01, 100.0)]), passed))
    decision = confirm(t, final)
    assert [name for name, _ in t.runs] == ["confirm-k4", "confirm-k8"]
    k4 = t.runs[0][1]
    assert "grid.levers=[van,bestkpad]" in k4 and "grid.corpora=[code_complete]" in k4
    assert "load.seed=1000" in k4 and "+grid.ks.bestkpad=[4]" in k4
    assert decision.decision == "confirmed" and decision.label == "real gain"
    out = write_outputs(t, final, decision)
    written = yaml.safe_load((out / "final.yaml").read_text())
    assert written["confirmation"]["label"] == "real gain" and written["confirmed"] is True
    # Confirmed: the candidate is what is deployed.
    assert (written["lever"], written["k_by_corpus"]) == ("bestkpad", {"code_complete": 4, "chat_bench": 8})
    assert "confirmed on new prompts" in written["deployed_because"]
    assert "bestkpad" in (out / "serve.sh").read_text()
    assert "Not confirmed" not in (out / "decisions.md").read_text()
    assert 1.15 < written["confirmation"]["speedup_vs_van"] < 1.2
    assert written["confirmation"]["interval"][0] > 1.01
    assert "| confirm | bestkpad" in (out / "decisions.md").read_text()


def test_a_confirmation_within_noise_is_reported_as_not_confirmed(tmp_path):
    final = LeverConfig.uniform("suffix", 8, CORPORA)
    figures = medians(
        [(c, "van", 0, 100.0, "C") for c in CORPORA] + [(c, "suffix", 8, 100.5, "C") for c in CORPORA]
    )
    passed = verdicts([("suffix", 8, c, "pass", "same") for c in CORPORA])
    t = FakeTune(config(tmp_path), (figures, drift([("C", 0.01, 100.0)]), passed))
    decision = confirm(t, final)
    assert [name for name, _ in t.runs] == ["confirm"]
    assert decision.decision == "not confirmed" and "within noise" in decision.reason
    out = write_outputs(t, final, decision)
    written = yaml.safe_load((out / "final.yaml").read_text())
    # Not confirmed: van is deployed, the candidate stands beside it with its figures.
    assert written["lever"] == "van" and written["k"] == 0 and written["confirmed"] is False
    assert written["candidate"] == {"lever": "suffix", "k": 8, "label": "suffix K=8"}
    assert "not confirmed on new prompts" in written["deployed_because"]
    serve = (out / "serve.sh").read_text()
    assert "speculative" not in serve and "suffix" not in serve.split("\n", 2)[2]
    log = (out / "decisions.md").read_text()
    assert "**Not confirmed, not deployed.** suffix K=8" in log
    assert log.splitlines()[0] == "# Tuning tiny: van (candidate suffix K=8 not deployed)"


def test_without_a_confirmation_nothing_but_van_is_deployed(tmp_path):
    final = LeverConfig.uniform("suffix", 8, CORPORA)
    t = FakeTune(compose_tune(["model=tiny", f"out_dir={tmp_path}", "stages=[van,suffix]"]), None)
    assert confirm(t, final) is None
    written = yaml.safe_load((write_outputs(t, final, None) / "final.yaml").read_text())
    assert written["lever"] == "van" and written["candidate"]["lever"] == "suffix"
    assert "no confirmation ran" in written["deployed_because"]


def test_confirm_repeats_sizes_the_confirmation_alone(tmp_path):
    from grid.config.compose import compose_config

    cfg = compose_tune(["model=tiny", f"out_dir={tmp_path}", "confirm_repeats=3",
                        'grid_overrides=["grid.repeats=5"]'])  # fmt: skip
    final = LeverConfig.uniform("suffix", 8, CORPORA)
    figures = medians(
        [(c, lever, k, 100.0, "C") for c in CORPORA for lever, k in (("van", 0), ("suffix", 8))]
    )
    t = FakeTune(cfg, (figures, drift([("C", 0.01, 100.0)]), verdicts([])))
    confirm(t, final)
    ((_, overrides),) = t.runs
    assert compose_config([*t.base, *overrides]).grid.repeats == 3
    assert compose_config(t.base).grid.repeats == 5  # the stages keep theirs


def test_a_confirmation_of_one_repeat_is_refused(tmp_path):
    import pytest

    from vocab.errors import ConfigError

    with pytest.raises(ConfigError, match="confirm_repeats=1"):
        compose_tune(["model=tiny", f"out_dir={tmp_path}", "confirm_repeats=1"])

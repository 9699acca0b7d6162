"""Analysis and tune decide by one rule set: Table 1's final lever per model is tune's final choice.

Both read the synthetic store (tests/unit/analysis/synthetic_store.py): the analysis through
analysis.study, tune through its real `procedure` (van -> suffix -> kpad -> best K -> w4a4 ->
dynk, experiments/decide.py), with each stage's evidence being that model's rows of the store.
"""

from dataclasses import replace

from rich.console import Console

from analysis.study import load_study
from experiments.tune import Tune, compose_tune, procedure
from grid.config.catalog import load_spec
from tests.unit.analysis.synthetic_store import build_store
from vocab.schema import ModelSpec

CORPORA = ["chat", "mix"]


class StoreTune(Tune):
    """A tune that runs nothing: every stage's evidence is one model's rows of an analysed store."""

    def __init__(self, cfg, model, study):
        super().__init__(cfg, model, "one-rule", Console(quiet=True), replay=True)
        self.study = study

    def stage(self, name, *overrides):
        return set()

    def evidence(self, keys=None):
        medians = self.study.medians[self.study.medians["model"] == self.model.name]
        return medians, self.study.drift, self.study.equivalence


def test_table1_and_tune_choose_the_same_lever_per_model(tmp_path):
    study = load_study(build_store(tmp_path / "store"))
    table = study.table1.set_index("model")["final_lever"].to_dict()
    cfg = compose_tune(["model=tiny", "sweep_ks=[4,8,12]"])
    cfg.corpora, cfg.final_corpus = CORPORA, "mix"
    chosen = {}
    for model in sorted(table):
        spec = replace(load_spec(ModelSpec, "tiny"), name=model, quantized_variant=None, moe=False)
        final = procedure(StoreTune(cfg, spec, study))
        chosen[model] = final.lever if final.lever == "van" else f"{final.lever} K={final.k('mix')}"
    assert table == {"llama31_8b": "bestkpad K=8", "qwen25_7b": "van"}
    assert chosen == table

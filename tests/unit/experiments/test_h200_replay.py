"""Replay the H200 tune of 2026-12-01 (docs/benchmarks/2026-12-01-h200-tune.md) through the decision logic.

SmolLM2 on code_complete, stages van -> suffix K=8 -> confirmation, measured on two lent H200s:
part 2 with 3 repeats (four sessions; suffix rejected, final van), part 3 resuming its store with
5 repeats and a confirmation of 3 (suffix kept, confirmation within noise). The fixtures are the
store's summary rows and verdicts. Each decision is checked against an interval computed here by
hand from the rows: Welch for the stage (its two levers ran in separate sessions), paired by repeat
for the confirmation (one session, the same prompts per repeat).
"""

import math

import pandas as pd
import pytest
import yaml
from rich.console import Console

from analysis.decision import t_quantile
from experiments.decide import REJECT, LeverConfig
from experiments.tune import Tune, compose_tune, confirm, procedure, write_outputs
from grid.config.catalog import load_spec
from tests.unit.experiments.test_tune_replay import FIXTURES, rebuild_store
from vocab.schema import ModelSpec

PART2 = ("c04901-van", "40dc10-van", "40dc10-suffix", "c92998-suffix")


def replay(tmp_path, repeats: int, sessions: tuple[str, ...] = ()):
    store = tmp_path / "store"
    rebuild_store(store, "h200_tune", sessions)
    cfg = compose_tune(
        ["model=tiny", "paired_stages=false",
         "experiment=gpu_validate", "corpora=[code_complete]", "final_corpus=code_complete",
         "stages=[van,suffix,confirm]", "confirm_repeats=3", f"out_dir={tmp_path}",
         f'grid_overrides=["cluster=device_h200","paths.store={store}","grid.repeats={repeats}"]']
    )  # fmt: skip
    t = Tune(cfg, load_spec(ModelSpec, "tiny"), "replay", Console(quiet=True), replay=True)
    final = procedure(t)
    confirmation = confirm(t, final)
    return t, final, confirmation, write_outputs(t, final, confirmation)


def rows() -> pd.DataFrame:
    cells = pd.read_csv(FIXTURES / "h200_tune_cells.csv")
    return cells[~cells["replicate"] & cells["valid"]]


def welch(xs: list[float], ys: list[float]) -> tuple[float, float]:
    lx, ly = [math.log(v) for v in xs], [math.log(v) for v in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    vx = sum((v - mx) ** 2 for v in lx) / (len(lx) - 1) / len(lx)
    vy = sum((v - my) ** 2 for v in ly) / (len(ly) - 1) / len(ly)
    df = (vx + vy) ** 2 / (vx**2 / (len(lx) - 1) + vy**2 / (len(ly) - 1))
    half = t_quantile(0.95, round(df, 3)) * math.sqrt(vx + vy)
    return math.exp(mx - my - half), math.exp(mx - my + half)


def stage_values(lever: str, sessions: tuple[str, ...]) -> list[float]:
    cells = rows()
    cells = cells[~cells["session_id"].str.endswith("confirm") & (cells["lever"] == lever)]
    if sessions:
        cells = cells[cells["session_id"].str.contains("|".join(sessions))]
    return list(cells["output_tok_per_s"])


def test_part2_alone_rejected_suffix_on_three_repeats(tmp_path):
    t, final, confirmation, _ = replay(tmp_path, 3, PART2)
    (suffix,) = [d for d in t.decisions if d.stage == "suffix"]
    lo, hi = welch(stage_values("suffix", PART2), stage_values("van", PART2))
    assert suffix.decision == REJECT and suffix.n_repeats == "3/3"
    assert (suffix.ci_lo, suffix.ci_hi) == pytest.approx((lo, hi), rel=1e-9)
    assert (round(lo, 3), round(hi, 3)) == (0.911, 1.693)  # the record's figures
    assert final.lever == "van" and confirmation is None


def test_five_repeats_no_longer_keep_suffix_without_a_drift_anchor(tmp_path):
    # Recorded: suffix kept at 5 repeats (1.238x [1.035, 1.482], the band taken as 0: gpu_validate
    # runs no drift anchor), confirmation not confirmed, final.yaml still suffix. Under issue 26's
    # rules the same rows keep nothing: unknown drift is never a keep, and van is deployed.
    t, final, confirmation, out = replay(tmp_path, 5)
    (suffix,) = [d for d in t.decisions if d.stage == "suffix"]
    lo, hi = welch(stage_values("suffix", ()), stage_values("van", ()))
    assert suffix.n_repeats == "5/5" and (suffix.ci_lo, suffix.ci_hi) == pytest.approx((lo, hi), rel=1e-9)
    assert (round(lo, 3), round(hi, 3)) == (1.035, 1.482)  # the interval is the recorded one
    assert suffix.decision == REJECT and suffix.label == "not judged (drift unknown)"
    assert "[1.035, 1.482]" in suffix.reason  # shown, though it cannot be judged
    assert final.lever == "van" and confirmation is None
    written = yaml.safe_load((out / "final.yaml").read_text())
    assert written["lever"] == "van" and written["deployed_because"] == "no stage kept a change over van"


def test_the_recorded_confirmation_is_recomputed_and_would_not_deploy(tmp_path):
    t, _, _, _ = replay(tmp_path, 5)
    suffix = LeverConfig.uniform("suffix", 8, ["code_complete"])
    confirmation = confirm(t, suffix)
    # The confirmation: its own cells only (seeds 1000-1002), paired by repeat.
    cells = rows()
    cells = cells[cells["session_id"].str.endswith("confirm")].pivot(
        index="repeat", columns="lever", values="output_tok_per_s"
    )
    logs = [math.log(s / v) for s, v in zip(cells["suffix"], cells["van"], strict=True)]
    mean = sum(logs) / 3
    half = t_quantile(0.95, 2) * math.sqrt(sum((d - mean) ** 2 for d in logs) / 2 / 3)
    assert confirmation.decision == "not confirmed" and confirmation.n_repeats == "3/3 paired"
    assert (confirmation.ci_lo, confirmation.ci_hi) == pytest.approx(
        (math.exp(mean - half), math.exp(mean + half)), rel=1e-9
    )
    assert (round(confirmation.ci_lo, 3), round(confirmation.ci_hi, 3)) == (0.785, 1.714)
    out = write_outputs(t, suffix, confirmation)
    written = yaml.safe_load((out / "final.yaml").read_text())
    # Issue 26: a candidate the confirmation did not confirm is not deployed; van is, beside it.
    assert written["lever"] == "van" and written["k"] == 0 and written["confirmed"] is False
    assert written["candidate"] == {"lever": "suffix", "k": 8, "label": "suffix K=8"}

"""Replay the recorded CPU tune (tests/fixtures/tune_*.csv) through the decision logic.

The store holds what `python -m experiments.tune model=tiny corpora=[code_complete,chat_bench]
sweep_ks=[4,8] stages=[van,suffix,kpad,best_k,confirm]` with 3 repeats measured on the CPU engine
on 2026-12-01 (docs/tune/tiny), every attempt: one van cell was INVALID and measured again on
resume in a later session. Replaying runs no engine: every stage reads the store. Each
keep/reject is then checked against figures recomputed here by hand from the raw rows
(per-repeat geometric means over the corpora, Welch's interval, the anchors' spread).
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from rich.console import Console

from analysis.decision import t_quantile
from experiments.decide import CHOSE, KEEP, REJECT, SKIP
from experiments.tune import Tune, compose_tune, confirm, procedure
from grid.config.catalog import load_spec
from store.atomic import write_parquet
from store.layout import StoreLayout
from store.read import connect
from store.writer import write_ok_attempt
from vocab.schema import ModelSpec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def rebuild_store(root: Path, fixture: str = "tune", sessions: tuple[str, ...] = ()) -> None:
    """A recorded tune's summary rows and verdicts (text fixtures `<fixture>_cells.csv`,
    `<fixture>_equivalence.csv`) written back as a store; only the sessions whose ids contain one of
    `sessions`, when given."""
    layout = StoreLayout(root)
    cells = pd.read_csv(FIXTURES / f"{fixture}_cells.csv").astype(object)
    if sessions:
        cells = cells[cells["session_id"].str.contains("|".join(sessions))]
    cells = cells.where(cells.notna(), None)
    for row in cells.to_dict("records"):
        tags = {name: row.pop(name) for name in ("session_id", "cell_key", "attempt_id")}
        write_ok_attempt(layout, tags, [], row)
    verdicts = pd.read_csv(FIXTURES / f"{fixture}_equivalence.csv")
    if sessions:
        verdicts = verdicts[verdicts["session_id"].str.contains("|".join(sessions))]
    write_parquet(layout.equivalence_file("recorded"), pa.Table.from_pandas(verdicts, preserve_index=False))


CORPORA = ["code_complete", "chat_bench"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    store = tmp_path_factory.mktemp("tune") / "store"
    rebuild_store(store)
    # As recorded: unpaired stages, and the CPU load's 24 prompts of the time (25 since 2026-12-02).
    grid = f'grid_overrides=["paths.store={store}","grid.repeats=3","load.num_prompts=24"]'
    cfg = compose_tune(
        ["model=tiny", "paired_stages=false", grid, "sweep_ks=[4,8]",
         "stages=[van,suffix,kpad,best_k,confirm]", f"out_dir={store.parent}"]
    )  # fmt: skip
    tune = Tune(cfg, load_spec(ModelSpec, "tiny"), "replay", Console(quiet=True), replay=True)
    final = procedure(tune)
    confirm(tune, final)
    return tune, final, store


def by_hand(store: Path) -> tuple[dict[tuple[str, int], list[float]], pd.DataFrame]:
    """Per (lever, K): the per-repeat scores (geometric mean over the corpora of the latest
    attempt of each cell, if VALID); and every VALID row (measured and anchor)."""
    cells = connect(store).execute("SELECT * FROM cells").df()
    # Anchors keep one cell key across sessions: each session's runs count (not the latest only).
    valid = cells[cells["valid"].astype(bool)]
    latest = cells[cells["anchor"].isna()].sort_values("attempt_id").groupby("cell_key").tail(1)
    measured = latest[latest["valid"].astype(bool)]
    scores: dict[tuple[str, int], list[float]] = {}
    for (lever, k), rows in measured.groupby(["lever", "k"]):
        per_repeat = rows.pivot_table(index="repeat", columns="corpus", values="output_tok_per_s")
        per_repeat = per_repeat.dropna()
        scores[(lever, int(k))] = [
            math.sqrt(r["code_complete"] * r["chat_bench"]) for _, r in per_repeat.iterrows()
        ]
    return scores, valid


def welch(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """Ratio of geometric means and its 90 % Welch interval, from the formulas in analysis/decision.py."""
    lx, ly = np.log(x), np.log(y)
    vx, vy = lx.var(ddof=1) / len(lx), ly.var(ddof=1) / len(ly)
    se = math.sqrt(vx + vy)
    df = se**4 / (vx**2 / (len(lx) - 1) + vy**2 / (len(ly) - 1))
    half = t_quantile(0.95, round(df, 3)) * se
    d = lx.mean() - ly.mean()
    return math.exp(d), math.exp(d - half), math.exp(d + half)


def band_by_hand(valid: pd.DataFrame, levers: list[tuple[str, int]]) -> float:
    """max(pooled RMS of the anchor pairs' log differences, spread of the sessions' anchor means)."""
    measured = valid[valid["anchor"].isna()]
    pairs = zip(measured["lever"], measured["k"], strict=True)
    sessions = set(measured[[(lever, k) in levers for lever, k in pairs]]["session_id"])
    anchors = valid[valid["anchor"].notna() & valid["session_id"].isin(sessions)]
    per_session = anchors.groupby("session_id")["output_tok_per_s"]
    if len(per_session) < len(sessions) or per_session.count().min() < 2:
        return math.nan  # a session without two valid anchor runs: drift unknown (judged as 0)
    order = anchors.assign(pos=anchors["anchor"].map({"start": 0, "end": 1})).sort_values("pos")
    diffs = order.groupby("session_id")["output_tok_per_s"].agg(lambda v: list(np.diff(np.log(v.to_numpy()))))
    squares = [d * d for ds in diffs for d in ds]
    means = per_session.mean()
    between = (means.max() - means.min()) / means.mean() if len(means) > 1 else 0.0
    return max(math.sqrt(sum(squares) / len(squares)), float(between))


def test_every_stage_decided(replayed):
    tune, final, _ = replayed
    stages = list(dict.fromkeys(d.stage for d in tune.decisions))
    assert stages == ["suffix", "kpad", "best_k", "confirm"]
    sweep = next(d for d in tune.decisions if d.stage == "best_k" and d.decision == CHOSE)
    assert set(sweep.per_corpus) == set(CORPORA)
    confirm = next(d for d in tune.decisions if d.stage == "confirm")
    assert final.lever == "van" and confirm.decision == SKIP


def test_each_change_is_judged_by_its_interval_against_the_drift_band(replayed):
    tune, _, store = replayed
    scores, valid = by_hand(store)
    levers = {"van": ("van", 0), "suffix K=8": ("suffix", 8), "bestkpad K=8": ("bestkpad", 8),
              "bestkpad K=4": ("bestkpad", 4)}  # fmt: skip
    judged = [d for d in tune.decisions if d.decision in (KEEP, REJECT)]
    assert len(judged) == 3
    for d in judged:
        x, y = scores[levers[d.candidate]], scores[levers[d.incumbent]]
        # Every repeat counts, the one measured again on resume too (van: 3, not 2).
        assert d.n_repeats == f"{len(x)}/{len(y)}" == "3/3"
        ratio, lo, hi = welch(x, y)
        assert (d.gain + 1, d.ci_lo, d.ci_hi) == pytest.approx((ratio, lo, hi))
        band = band_by_hand(valid, [levers[d.candidate], levers[d.incumbent]])
        assert d.band == pytest.approx(band)
        label = "real gain" if lo - 1 > band else "real loss" if hi - 1 < -band else "within noise"
        assert d.label == label
        assert (d.decision == KEEP) == (label == "real gain")
    # What the recorded run decided: suffix within noise, both K-pad Ks real losses.
    assert [d.label for d in judged] == ["within noise", "real loss", "real loss"]


def test_the_recorded_decisions_are_reproduced(replayed):
    tune, final, _ = replayed
    recorded = (Path(__file__).resolve().parents[3] / "docs" / "tune" / "tiny" / "decisions.md").read_text()
    for d in tune.decisions:
        assert f"| {d.stage} | {d.candidate} |" in recorded
        assert f"**{d.decision}**" in recorded.split(f"| {d.stage} | {d.candidate} |", 1)[1].split("\n", 1)[0]
    assert final.label in recorded.splitlines()[0]


def test_scores_match_a_hand_computation(replayed):
    tune, _, store = replayed
    scores, _ = by_hand(store)
    suffix = next(d for d in tune.decisions if d.stage == "suffix")
    geomean = lambda values: math.exp(sum(map(math.log, values)) / len(values))  # noqa: E731
    assert suffix.candidate_tok_per_s == pytest.approx(geomean(scores[("suffix", 8)]))
    assert suffix.incumbent_tok_per_s == pytest.approx(geomean(scores[("van", 0)]))

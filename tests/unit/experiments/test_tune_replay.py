"""Replay the recorded CPU tune (tests/fixtures/tune_*.csv) through the decision logic.

The store holds what `python -m experiments.tune model=tiny corpora=[code_complete,chat_bench]
sweep_ks=[4,8]` measured on the CPU engine (docs/tune/tiny/decisions.md). Replaying runs no
engine: every stage reads the store. Each keep/reject is then checked against figures
recomputed here by hand from the raw rows (medians of VALID cells, the anchors' spread).
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from rich.console import Console

from experiments.decide import CHOSE, KEEP, REJECT, SKIP
from experiments.tune import Tune, compose_tune, procedure
from grid.catalog import load_spec
from grid.schema import ModelSpec
from store.atomic import write_parquet
from store.layout import StoreLayout
from store.read import connect
from store.writer import write_ok_attempt

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def rebuild_store(root: Path) -> None:
    """The recorded tune's summary rows and verdicts (text fixtures) written back as a store."""
    layout = StoreLayout(root)
    cells = pd.read_csv(FIXTURES / "tune_cells.csv").astype(object)
    cells = cells.where(cells.notna(), None)
    for row in cells.to_dict("records"):
        tags = {name: row.pop(name) for name in ("session_id", "cell_key", "attempt_id")}
        write_ok_attempt(layout, tags, [], row)
    verdicts = pd.read_csv(FIXTURES / "tune_equivalence.csv")
    write_parquet(layout.equivalence_file("recorded"), pa.Table.from_pandas(verdicts, preserve_index=False))


CORPORA = ["code_complete", "chat_bench"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    store = tmp_path_factory.mktemp("tune") / "store"
    rebuild_store(store)
    cfg = compose_tune(
        ["model=tiny", f'grid_overrides=["paths.store={store}"]', "sweep_ks=[4,8]", f"out_dir={store.parent}"]
    )
    tune = Tune(cfg, load_spec(ModelSpec, "tiny"), "replay", Console(quiet=True), replay=True)
    return tune, procedure(tune), store


def by_hand(store: Path) -> tuple[pd.Series, pd.DataFrame]:
    """Median tok/s per (lever, k, corpus) over VALID cells; the VALID measured and anchor rows."""
    cells = connect(store).execute("SELECT * FROM cells").df()
    valid = cells[cells["valid"].astype(bool)]
    measured = valid[valid["anchor"].isna()]
    medians = measured.groupby(["lever", "k", "corpus"])["output_tok_per_s"].median()
    return medians, valid


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


def score(medians: pd.Series, lever: str, k: int) -> float:
    """Geometric mean over the two corpora (the tune decides on it when `mix` is not measured)."""
    return math.sqrt(medians[(lever, k, "code_complete")] * medians[(lever, k, "chat_bench")])


def test_every_stage_decided(replayed):
    tune, _, _ = replayed
    stages = list(dict.fromkeys(d.stage for d in tune.decisions))
    assert stages == ["suffix", "kpad", "best_k", "w4a4", "dynk"]
    sweep = next(d for d in tune.decisions if d.stage == "best_k")
    assert sweep.decision == CHOSE and set(sweep.per_corpus) == set(CORPORA)
    w4a4 = next(d for d in tune.decisions if d.stage == "w4a4")
    assert w4a4.decision == SKIP and "no quantized_variant" in w4a4.reason


def test_each_change_is_kept_exactly_when_it_beats_the_incumbent_beyond_drift(replayed):
    tune, _, store = replayed
    _, valid = by_hand(store)
    levers = {"van": ("van", 0), "suffix K=8": ("suffix", 8), "bestkpad K=8": ("bestkpad", 8),
              "bestkpad K=4": ("bestkpad", 4), "dynk K=12": ("dynk", 12)}  # fmt: skip
    for d in tune.decisions:
        if d.decision not in (KEEP, REJECT):
            continue
        assert d.gain == pytest.approx(d.candidate_tok_per_s / d.incumbent_tok_per_s - 1)
        band = band_by_hand(valid, [levers[d.candidate], levers[d.incumbent]])
        assert d.band == pytest.approx(band, nan_ok=True)
        gate_failed = "gate failed" in d.reason
        assert (d.decision == KEEP) == (d.label == "real gain" and not gate_failed), d
        # The recorded CPU tune ran one repeat per cell: no change can be judged, so none is kept
        # (before the one rule: kept or not by the point gain against the band).
        assert d.label == "not judged (n<2)" and d.decision == REJECT
        if not gate_failed:
            assert d.reason.startswith("not judged, fewer than 2 repeats")


def test_the_recorded_decisions_are_reproduced(replayed):
    tune, final, _ = replayed
    recorded = (Path(__file__).resolve().parents[3] / "docs" / "tune" / "tiny" / "decisions.md").read_text()
    for d in tune.decisions:
        assert f"| {d.stage} | {d.candidate} |" in recorded
        assert f"**{d.decision}**" in recorded.split(f"| {d.stage} | {d.candidate} |", 1)[1].split("\n", 1)[0]
    assert final.label in recorded.splitlines()[0]


def test_scores_match_a_hand_computation(replayed):
    tune, _, store = replayed
    medians, _ = by_hand(store)
    suffix = next(d for d in tune.decisions if d.stage == "suffix")
    assert suffix.candidate_tok_per_s == pytest.approx(score(medians, "suffix", 8))
    assert suffix.incumbent_tok_per_s == pytest.approx(score(medians, "van", 0))

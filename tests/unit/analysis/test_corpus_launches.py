"""Launches per corpus in the simulated sessions (analysis/simulated_sessions.SimulatedSessions.
corpus_launch_levers) and in what make power prices (experiments/procedure_power.py).

The grid the tune runs (grid.engine_reuse=auto) gives each lever that drafts from the engine's history
an engine per corpus in every repeat (grid/config/expand.py fresh_per_corpus); the simulation had every
lever's launch serve both corpora, so a drafting lever's two corpora shared one launch term and the
tune was priced at half its drafting launches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import experiments.procedure_power as pp
from analysis.simulated_sessions import ProcedureNoise, SimulatedSessions
from grid.config.catalog import CONF_DIR, load_spec
from grid.config.compose import compose_config
from grid.config.expand import expand_all, to_config
from grid.plan.groups import group_by_engine
from vocab.cells import drafts_from_history
from vocab.schema import LeverSpec, ModelSpec

# Launch terms only: a run's ln tok/s is its launch's draw, to a millionth.
LAUNCH_ONLY = ProcedureNoise("launch only", 1e-6, 1e-6, 0.0, 0.0, launch=0.1)


def stage(levers: tuple[str, ...], repeats: int = 300) -> SimulatedSessions:
    sessions = SimulatedSessions(
        cfg=pp.tune_config(corpora=("a", "b")),
        model=ModelSpec(name="sim", path="sim"),
        tune_id="t",
        noise=LAUNCH_ONLY,
        rng=np.random.default_rng(3),
        repeats=repeats,
        corpus_launch_levers=levers,
    )
    sessions.stage("s", {"van": [], "suffix": [8]})
    return sessions


def corpus_correlation(sessions: SimulatedSessions, lever: str) -> float:
    by = {}
    for row in sessions.rows:
        if row["anchor"] is None and row["lever"] == lever:
            by.setdefault(row["repeat"], {})[row["corpus"]] = math.log(row["output_tok_per_s"])
    a = [v["a"] for v in by.values()]
    b = [v["b"] for v in by.values()]
    return float(np.corrcoef(a, b)[0, 1])


def test_a_lever_launched_per_corpus_draws_a_launch_term_per_corpus_and_counts_its_launches():
    shared, per_corpus = stage(()), stage(("suffix",))
    # One launch for both corpora: their values move together; a launch each: independently.
    assert corpus_correlation(shared, "suffix") > 0.99
    assert abs(corpus_correlation(per_corpus, "suffix")) < 0.2  # 300 repeats: r's sd ~0.06
    assert corpus_correlation(per_corpus, "van") > 0.99  # van still serves both corpora on one launch
    assert (shared.launches, shared.corpus_launches) == (600, 0)
    assert (per_corpus.launches, per_corpus.corpus_launches) == (300, 600)


def test_without_levers_per_corpus_the_draws_are_the_old_ones():
    one = stage((), repeats=10)
    again = stage(("dynk",), repeats=10)  # a lever the stage does not run: no draw changes
    assert one.rows == again.rows


def test_the_levers_launched_per_corpus_are_those_the_tunes_grid_launches_per_corpus():
    # Every shipped lever: the grid's rule (drafts from history, under the default engine_reuse=auto).
    names = sorted(p.stem for p in (CONF_DIR / "lever").glob("*.yaml"))
    history = {n for n in names if drafts_from_history(load_spec(LeverSpec, n, CONF_DIR))}
    assert history and history == set(pp.CORPUS_LAUNCH_LEVERS) & set(names)
    # And the tune's grid (gpu_validate, as make power prices it) does launch them per corpus.
    overrides = [
        "experiment=gpu_validate",
        "grid.models=[tiny]",
        "grid.levers=[van,suffix]",
        "+grid.ks.suffix=[8]",
        "grid.repeats=2",
        "grid.anchor.enabled=false",
        "grid.sequential.enabled=false",
        "grid.confirm.enabled=false",
    ]
    cfg = to_config(compose_config(overrides))
    assert cfg.grid.engine_reuse == "auto"
    groups = group_by_engine([c for c in expand_all(cfg).cells if not c.replicate])
    suffix = [g for g in groups if "suffix" in g.cells[0].label]
    van = [g for g in groups if "/van/" in g.cells[0].label]
    corpora = len(cfg.grid.corpora)
    assert corpora == 2 and len(suffix) == 2 * corpora and len(van) == 2
    assert all(len(g.cells) == 1 for g in suffix) and all(len(g.cells) == corpora for g in van)


def test_make_power_prices_a_per_corpus_launch_as_grid_plan_does():
    costs = pp.launch_costs()
    # grid plan: van's repeat is one launch (both corpora, 67 s start); a drafting lever adds a launch per
    # corpus, each a start and its corpus's tokens: dearer than half of van's, cheaper than all of it.
    assert costs.measured_h / 2 < costs.corpus_h < costs.measured_h
    o = pp.Outcome("van", "van", 0, math.nan, math.nan, launches=3, solo_launches=2, corpus_launches=4)
    assert costs.tune_hours(o) == pytest.approx(3 * costs.measured_h + 2 * costs.solo_h + 4 * costs.corpus_h)


def test_the_tunes_simulated_check_launches_as_its_grids_engine_reuse_does():
    assert pp.corpus_launch_levers("auto") == pp.CORPUS_LAUNCH_LEVERS
    assert pp.corpus_launch_levers("shared") == () and pp.corpus_launch_levers("per_spec") == ()
    assert {"van", *pp.CORPUS_LAUNCH_LEVERS} <= set(pp.corpus_launch_levers("per_corpus"))
    cfg = pp.tune_config(stages=pp.SHORT_STAGES, gate=True)
    auto = pp.outcomes(pp.H100_MEASURED, {}, 3, 4, 5, cfg=cfg, gate=pp.GATE_ON, workers=1)
    shared = pp.outcomes(pp.H100_MEASURED, {}, 3, 4, 5, cfg=cfg, gate=pp.GATE_ON, workers=1, per_corpus=())
    assert all(o.corpus_launches > 0 for o in auto)  # the default: the tune's grid, engine_reuse=auto
    assert all(o.corpus_launches == 0 for o in shared)

"""Per-lever launch terms in the simulated sessions (analysis/simulated_sessions.ProcedureNoise.lever_launch).

The H100 records measured different launch terms for different levers (van 6.4 %, suffix 11.1 %,
bestkpad 3.9 %, same slice, 4 launches or more); a model with one launch sigma for all flatters or
punishes the others.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from analysis.simulated_sessions import ProcedureNoise, SessionCorpora, SimulatedSessions
from vocab.schema import ModelSpec

# Block, drift and session terms near zero, so a run's ln tok/s is its lever's effect plus its launch.
QUIET = dict(van=1e-6, lever=1e-6, drift=0.0, session=0.0)


def simulated_rows(noise: ProcedureNoise, repeats: int) -> list[dict]:
    sessions = SimulatedSessions(
        cfg=SessionCorpora(corpora=["c"]),
        model=ModelSpec(name="sim", path="sim"),
        tune_id="t",
        noise=noise,
        rng=np.random.default_rng(7),
        repeats=repeats,
    )
    sessions.stage("s", {"van": [], "suffix": [4], "bestkpad": [8]})
    return sessions.rows


def launch_sds(noise: ProcedureNoise, repeats: int = 400) -> dict[str, float]:
    by_lever: dict[str, list[float]] = {}
    for row in simulated_rows(noise, repeats):
        if row["anchor"] is None:
            by_lever.setdefault(row["lever"], []).append(math.log(row["output_tok_per_s"]))
    return {lever: statistics.stdev(values) for lever, values in by_lever.items()}


def test_a_lever_named_in_lever_launch_moves_by_its_own_sigma_the_others_by_launch():
    noise = ProcedureNoise("per lever", **QUIET, launch=0.05, lever_launch=(("suffix", 0.20),))
    sds = launch_sds(noise)
    # 400 launches each: an sd's standard error is ~3.5 % of itself.
    assert sds["suffix"] == pytest.approx(0.20, rel=0.12)
    assert sds["van"] == pytest.approx(0.05, rel=0.12)
    assert sds["bestkpad"] == pytest.approx(0.05, rel=0.12)
    assert noise.launch_of("suffix") == 0.20 and noise.launch_of("van") == 0.05
    assert noise.max_launch == 0.20


def test_a_lever_named_at_the_shared_sigma_draws_exactly_as_without_the_field():
    # The field leaves the rows that do not use it drawn exactly as before: naming a lever the stage
    # runs (suffix) at the shared sigma must give the very same rows, value for value, so the field
    # takes no extra draws from the stream and the older make power rows are unchanged.
    one = ProcedureNoise("one", **QUIET, launch=0.05)
    same = ProcedureNoise("one", **QUIET, launch=0.05, lever_launch=(("suffix", 0.05),))
    assert simulated_rows(one, 20) == simulated_rows(same, 20)
    assert one.max_launch == 0.05
    # and the comparison can fail: another sigma for suffix moves suffix's rows.
    other = ProcedureNoise("one", **QUIET, launch=0.05, lever_launch=(("suffix", 0.06),))
    assert simulated_rows(one, 20) != simulated_rows(other, 20)


def test_lever_launch_without_a_launch_term_is_refused():
    with pytest.raises(ValueError, match="lever_launch needs launch > 0"):
        ProcedureNoise("bad", **QUIET, lever_launch=(("suffix", 0.1),))

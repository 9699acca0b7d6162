"""`plan`'s cost model from what the store measured: each model's engine start and rate.

Every cell stores `engine_ready_s` (launch to ready) and `output_tok_per_s`. Per model, the
medians over its VALID cells (drift anchors included: they are real launches and loads) replace
plan.engine_start_s and the model's expected_tok_per_s in grid/plan/cost.py, so a plan made after a
first run is priced at this cluster's figures instead of one default.
"""

from __future__ import annotations

import dataclasses
import math

import duckdb

from vocab.errors import GridError
from vocab.paths import store_path
from vocab.schema import Config


def measured_figures(config: Config) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Per model: median engine start (s), median output tok/s, and how many cells they come from.

    Empty where the store holds nothing (or cannot be read: a plan never fails on the store)."""
    from analysis.load import _columns  # the store's columns, as analysis reads them
    from store.read import connect, has_view

    try:
        con = connect(store_path(config.paths.store, config.paths.store_options))
        if not has_view(con, "cells") or not {"engine_ready_s", "valid"} <= _columns(con, "cells"):
            return {}, {}, {}
        rows = con.execute(
            """SELECT model, median(engine_ready_s), median(output_tok_per_s), count(*) FROM cells
               WHERE valid AND engine_ready_s > 0 AND output_tok_per_s > 0 GROUP BY model"""
        ).fetchall()
    except (OSError, ValueError, duckdb.Error, GridError):
        return {}, {}, {}
    start = {m: float(s) for m, s, _, _ in rows if s is not None and math.isfinite(s)}
    rate = {m: float(r) for m, _, r, _ in rows if r is not None and math.isfinite(r)}
    return start, rate, {m: int(n) for m, _, _, n in rows}


def with_store_costs(config: Config) -> Config:
    """`config` with plan.measured_start_s and plan.measured_rates from the store (plan.from_store)."""
    if not config.plan.from_store:
        return config
    start, rate, _ = measured_figures(config)
    plan = dataclasses.replace(
        config.plan,
        measured_start_s={**start, **config.plan.measured_start_s},
        measured_rates={**rate, **config.plan.measured_rates},
    )
    return dataclasses.replace(config, plan=plan)

"""`plan`'s cost model from what the store measured: each model's engine start and rate, and the
engine start per tensor-parallel size.

Every cell stores `engine_ready_s` (launch to ready), `output_tok_per_s` and `gpus` (its engine's
TP size). Per model, the medians over its VALID cells (drift anchors included: they are real
launches and loads) replace plan.engine_start_s and the model's expected_tok_per_s in
grid/plan/cost.py, so a plan made after a first run is priced at this cluster's figures instead of
one default; per TP size, the median start prices the models the store has not run at that size.
"""

from __future__ import annotations

import dataclasses
import math

import duckdb

from vocab.errors import GridError
from vocab.paths import store_path
from vocab.schema import Config


def _cells_rows(
    config: Config, needed: set[str], sql: str, con: duckdb.DuckDBPyConnection | None = None
) -> list[tuple]:
    """`sql`'s rows over the store's cells view; [] where the store holds no cells, lacks a `needed`
    column or cannot be read (a plan never fails on the store). `con`: a connection already open."""
    from analysis.load import _columns  # the store's columns, as analysis reads them
    from store.read import has_view

    if con is None and (con := _connect(config)) is None:
        return []
    try:
        if not has_view(con, "cells") or not needed <= _columns(con, "cells"):
            return []
        return con.execute(sql).fetchall()
    except (OSError, ValueError, duckdb.Error, GridError):
        return []


def _connect(config: Config) -> duckdb.DuckDBPyConnection | None:
    """The store's connection (store.read.connect reads and verifies every attempt), or None."""
    from store.read import connect

    try:
        return connect(store_path(config.paths.store, config.paths.store_options))
    except (OSError, ValueError, duckdb.Error, GridError):
        return None


def measured_figures(
    config: Config, con: duckdb.DuckDBPyConnection | None = None
) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Per model: median engine start (s), median output tok/s, and how many cells they come from.

    Empty where the store holds nothing (or cannot be read: a plan never fails on the store)."""
    rows = _cells_rows(
        config,
        {"engine_ready_s", "valid"},
        """SELECT model, median(engine_ready_s), median(output_tok_per_s), count(*) FROM cells
           WHERE valid AND engine_ready_s > 0 AND output_tok_per_s > 0 GROUP BY model""",
        con,
    )
    start = {m: float(s) for m, s, _, _ in rows if s is not None and math.isfinite(s)}
    rate = {m: float(r) for m, _, r, _ in rows if r is not None and math.isfinite(r)}
    return start, rate, {m: int(n) for m, _, _, n in rows}


def measured_start_by_tp(config: Config, con: duckdb.DuckDBPyConnection | None = None) -> dict[int, float]:
    """Per tensor-parallel size (the cells' `gpus`): the median engine start (s) of the store's VALID
    cells. Empty where the store holds none or has no `gpus` column (cells from before it)."""
    rows = _cells_rows(
        config,
        {"engine_ready_s", "valid", "gpus"},
        """SELECT gpus, median(engine_ready_s) FROM cells
           WHERE valid AND engine_ready_s > 0 AND gpus >= 1 GROUP BY gpus""",
        con,
    )
    return {int(tp): float(s) for tp, s in rows if s is not None and math.isfinite(s)}


def with_store_costs(config: Config) -> Config:
    """`config` with plan.measured_start_s, plan.measured_start_s_by_tp and plan.measured_rates from
    the store (plan.from_store); figures given in the config win."""
    if not config.plan.from_store:
        return config
    con = _connect(config)  # one read of the store for both queries
    if con is None:
        return config
    start, rate, _ = measured_figures(config, con)
    plan = dataclasses.replace(
        config.plan,
        measured_start_s={**start, **config.plan.measured_start_s},
        measured_start_s_by_tp={**measured_start_by_tp(config, con), **config.plan.measured_start_s_by_tp},
        measured_rates={**rate, **config.plan.measured_rates},
    )
    return dataclasses.replace(config, plan=plan)

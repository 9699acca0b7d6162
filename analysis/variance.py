"""Variance components of ln(output tok/s) per model and lever configuration. Pure.

Three nested levels (a cell belongs to a block, a block to an engine launch, a launch to a session):

  ln tok/s = corpus mean (fixed) + u_session + u_launch + e_block
    u_session ~ N(0, sd_session^2)   between sessions
    u_launch  ~ N(0, sd_launch^2)    between engine launches within a session
    e_block   ~ N(0, sd_block^2)     block to block within one engine launch

A block is the cells of one launch that share a corpus and a prompt draw (analysis/blocks.py:
column `block` where the store has it, else the repeat). Cells of one configuration that share a
block are averaged first (ln scale), so each block counts once. Corpora differ wildly in tok/s,
so the corpus enters as a fixed effect: every sum of squares below is taken after the corpus
means are removed, and the corpus means' degrees of freedom are not counted in any component.

Estimator: Henderson's method III (method of moments for unbalanced nested designs). With P_M
the projection onto the columns of M, C the corpus indicators, S the session's, L the launch's:

  SS_block   = y'(I - P_CSL)y            df_block   = n - rank(CSL)
  SS_launch  = y'(P_CSL - P_CS)y         df_launch  = rank(CSL) - rank(CS)
  SS_session = y'(P_CS - P_C)y           df_session = rank(CS) - rank(C)
  E[SS_block]   = df_block sd_block^2
  E[SS_launch]  = tr(A_L LL') sd_launch^2 + df_launch sd_block^2                 (A_L = P_CSL - P_CS)
  E[SS_session] = tr(A_S SS') sd_session^2 + tr(A_S LL') sd_launch^2 + df_session sd_block^2

solved from the bottom up. A negative variance estimate is clamped to 0 (a real estimate of
"none"). A level whose degrees of freedom are 0 (one block per launch, one launch per session,
one session) is missing (NaN) with the reason, never 0. With one block per launch the block
and launch terms cannot be told apart; their sum, the per-run variance, still can.

run sd = sqrt(sd_block^2 + sd_launch^2): the noise of one run on an engine launch of its own
(what analysis.power calls a run). Its df is Welch-Satterthwaite's for that sum of mean squares.
Its 90 % interval sd_run_lo..sd_run_hi says how far the repeats advice built on it (analysis.power
--store) can be trusted. sd_run^2 = (1 - c) MS_block + c MS_launch with c = df_launch / tr(A_L LL')
(both weights >= 0), so Graybill and Wang's modified large-sample interval for a sum of mean
squares applies (Burdick & Graybill 1992, 3.3):

  hi^2 = v + sqrt(sum (w_i MS_i (df_i / chi2_{0.05, df_i} - 1))^2)
  lo^2 = v - sqrt(sum (w_i MS_i (1 - df_i / chi2_{0.95, df_i}))^2)

(v the unclamped sum; exact for one mean square). At 2 launches x 10 blocks (11.8 % launch,
10 % block sd; 1,000 simulated stores) it held the truth 89.9 % of the time (its upper end
95.9 %), where a chi-square on Satterthwaite's df held it 75.2 %. Its upper end is a median
10x the estimate there (3.4x at 3 launches x 6 blocks, 1.6x at 8 x 3), and the repeats the
advice asks for go as its square: measure more launches before trusting the advice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import chi2

from analysis.repeats import valid_only

CONFIG_FIELDS = ["model", "lever", "k"]
COMPONENTS = ("block", "launch", "session")
COMPONENT_COLUMNS = [
    *CONFIG_FIELDS,
    "n_cells",
    "n_blocks",
    "n_launches",
    "n_sessions",
    "n_corpora",
    "sd_block",
    "df_block",
    "sd_launch",
    "df_launch",
    "sd_session",
    "df_session",
    "sd_run",
    "df_run",
    "sd_run_lo",
    "sd_run_hi",
    "notes",
]
RUN_INTERVAL = 0.90
NO_LAUNCH_IDS = "no cell records its engine launch (engine_launch_id): no variance components"


def block_of(cells: pd.DataFrame) -> pd.Series:
    """Each cell's block within its launch: the `block` column where recorded, else the repeat."""
    repeat = cells["repeat"] if "repeat" in cells else pd.Series(0, index=cells.index)
    if "block" not in cells:
        return repeat.fillna(-1).astype(int)
    return cells["block"].where(cells["block"].notna(), repeat).fillna(-1).astype(int)


def block_means(cells: pd.DataFrame) -> pd.DataFrame:
    """VALID cells with a launch id and tok/s > 0, one row per (configuration, block): mean ln tok/s.

    Columns: model, lever, k, session_id, launch (session id + launch id), corpus, block, log_tok_s,
    n_cells (cells averaged into the block).
    """
    columns = [*CONFIG_FIELDS, "session_id", "launch", "corpus", "block", "log_tok_s", "n_cells"]
    if cells.empty or "engine_launch_id" not in cells:
        return pd.DataFrame(columns=columns)
    kept, _ = valid_only(cells)
    kept = kept[kept["engine_launch_id"].notna() & (kept["output_tok_per_s"].astype(float) > 0)]
    if kept.empty:
        return pd.DataFrame(columns=columns)
    kept = kept.assign(
        launch=kept["session_id"].astype(str) + "/" + kept["engine_launch_id"].astype(str),
        block=block_of(kept),
        log_tok_s=np.log(kept["output_tok_per_s"].astype(float)),
        k=kept["k"].fillna(0).astype(int),
    )
    keys = [*CONFIG_FIELDS, "session_id", "launch", "corpus", "block"]
    grouped = kept.groupby(keys, dropna=False)["log_tok_s"]
    return grouped.agg(log_tok_s="mean", n_cells="count").reset_index()[columns]


def _indicators(values: pd.Series) -> np.ndarray:
    codes, uniques = pd.factorize(values, sort=True)
    out = np.zeros((len(values), len(uniques)))
    out[np.arange(len(values)), codes] = 1.0
    return out


def _projection(matrix: np.ndarray) -> tuple[np.ndarray, int]:
    """(P, rank): the orthogonal projection onto the columns of `matrix`."""
    u, s, _ = np.linalg.svd(matrix, full_matrices=False)
    tol = s.max() * max(matrix.shape) * np.finfo(float).eps if s.size else 0.0
    rank = int((s > tol).sum())
    basis = u[:, :rank]
    return basis @ basis.T, rank


@dataclass(frozen=True)
class Components:
    """One configuration's estimates: variances (NaN where missing), level df, and the reasons."""

    var: dict[str, float]
    df: dict[str, int]
    var_run: float
    df_run: float
    notes: tuple[str, ...]
    run_lo: float = math.nan  # the per-run sd's interval (module doc)
    run_hi: float = math.nan


def _satterthwaite(terms: list[tuple[float, float]]) -> float:
    """df of sum(c_i * MS_i) from [(c_i * MS_i, df_i)]: (sum)^2 / sum((c_i MS_i)^2 / df_i)."""
    total = sum(t for t, _ in terms)
    denominator = sum(t * t / df for t, df in terms if df > 0)
    return total * total / denominator if denominator > 0 else math.nan


def estimate(blocks: pd.DataFrame) -> Components:
    """Henderson III (module doc) over one configuration's block means (block_means' rows)."""
    y = blocks["log_tok_s"].to_numpy(float)
    n = len(y)
    corpus, session, launch = (_indicators(blocks[c]) for c in ("corpus", "session_id", "launch"))
    p_c, r_c = _projection(corpus)
    p_cs, r_cs = _projection(np.hstack([corpus, session]))
    p_csl, r_csl = _projection(np.hstack([corpus, session, launch]))
    df = {"block": n - r_csl, "launch": r_csl - r_cs, "session": r_cs - r_c}
    ss = {
        "block": float(y @ (y - p_csl @ y)),
        "launch": float(y @ ((p_csl - p_cs) @ y)),
        "session": float(y @ ((p_cs - p_c) @ y)),
    }
    a_l, a_s = p_csl - p_cs, p_cs - p_c
    k_l = float(np.sum((a_l @ launch) * launch))
    k_sl, k_ss = float(np.sum((a_s @ launch) * launch)), float(np.sum((a_s @ session) * session))
    var = dict.fromkeys(COMPONENTS, math.nan)
    notes = []
    one_block_each = blocks.groupby("launch").size().max() == 1
    var_run = df_run = math.nan
    terms: list[tuple[float, float, float]] = []  # (weight, mean square, df) summing to var_run
    if df["block"] > 0:
        var["block"] = ss["block"] / df["block"]
    else:
        why = "one block per launch" if one_block_each else "no block left after corpus means"
        notes.append(f"block: {why}")
    if df["launch"] == 0:
        notes.append("launch: one launch per session")
    elif df["block"] > 0:
        c = df["launch"] / k_l
        var["launch"] = max(0.0, (ss["launch"] - df["launch"] * var["block"]) / k_l)
        ms_b, ms_l = var["block"], ss["launch"] / df["launch"]
        var_run = var["block"] + var["launch"]
        df_run = _satterthwaite([((1 - c) * ms_b, df["block"]), (c * ms_l, df["launch"])])
        terms = [(1 - c, ms_b, df["block"]), (c, ms_l, df["launch"])]
        if var["launch"] == 0.0:  # clamped: the run is the block level alone, its df still the launches'
            var_run = var["block"]
    elif one_block_each:  # LL' = I: E[SS_launch] = df_launch (sd_launch^2 + sd_block^2)
        notes.append("launch: not separable from block (one block per launch); run sd is their sum")
        var_run, df_run = ss["launch"] / df["launch"], float(df["launch"])
        terms = [(1.0, var_run, df["launch"])]
    else:
        notes.append("launch: no block-level df to separate it")
    if df["session"] == 0:
        notes.append("session: one session")
    elif not math.isnan(var["launch"]):
        lower = k_sl * var["launch"] + df["session"] * var["block"]
        var["session"] = max(0.0, (ss["session"] - lower) / k_ss)
    elif one_block_each and not math.isnan(var_run):  # k_sl = df_session when LL' = I
        var["session"] = max(0.0, (ss["session"] - df["session"] * var_run) / k_ss)
    elif df["launch"] == 0 and not math.isnan(var["block"]):  # one launch per session: no launch term
        notes.append("session: includes the launch term (one launch per session)")
        var["session"] = max(0.0, (ss["session"] - df["session"] * var["block"]) / k_ss)
    else:
        notes.append("session: the launch term is missing")
    run_lo, run_hi = run_interval(terms, var_run)
    return Components(var, df, var_run, df_run, tuple(notes), run_lo, run_hi)


def run_interval(
    terms: list[tuple[float, float, float]], point: float, confidence: float = RUN_INTERVAL
) -> tuple[float, float]:
    """(lo, hi) sd interval of sum(w_i E[MS_i]) from [(w_i >= 0, MS_i, df_i)]: Graybill-Wang's
    modified large-sample bounds (module doc), widened to hold `point` (the clamped estimate);
    NaN without terms."""
    if not terms or math.isnan(point):
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    value = sum(w * ms for w, ms, _ in terms)
    up = math.sqrt(sum((w * ms * (df / chi2.ppf(tail, df) - 1.0)) ** 2 for w, ms, df in terms))
    down = math.sqrt(sum((w * ms * (1.0 - df / chi2.ppf(1.0 - tail, df))) ** 2 for w, ms, df in terms))
    lo, hi = math.sqrt(max(0.0, value - down)), math.sqrt(value + up)
    return min(lo, math.sqrt(point)), max(hi, math.sqrt(point))


def variance_components(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (model, lever, k): the three sds of ln tok/s (module doc), their df, counts, notes.

    `cells`: analysis.load.measured_cells (no anchors, no replicates; INVALID cells are left out
    here). sd_* and sd_run are on the ln scale (0.05 ~ 5 % run to run); NaN where the data cannot
    estimate them, `notes` says why. Empty (attrs["note"]: why) when no cell has a launch id.
    """
    blocks = block_means(cells)
    table = pd.DataFrame(columns=COMPONENT_COLUMNS)
    if blocks.empty:
        has_ids = "engine_launch_id" in cells and cells["engine_launch_id"].notna().any()
        table.attrs["note"] = "no VALID cell with a launch id" if has_ids else NO_LAUNCH_IDS
        return table
    rows = []
    for (model, lever, k), group in blocks.groupby(CONFIG_FIELDS, sort=True):
        est = estimate(group.reset_index(drop=True))
        rows.append(
            {
                "model": model,
                "lever": lever,
                "k": int(k),
                "n_cells": int(group["n_cells"].sum()),
                "n_blocks": len(group),
                "n_launches": group["launch"].nunique(),
                "n_sessions": group["session_id"].nunique(),
                "n_corpora": group["corpus"].nunique(),
                **{f"sd_{c}": math.sqrt(est.var[c]) for c in COMPONENTS},
                **{f"df_{c}": est.df[c] for c in COMPONENTS},
                "sd_run": math.sqrt(est.var_run),
                "df_run": est.df_run,
                "sd_run_lo": est.run_lo,
                "sd_run_hi": est.run_hi,
                "notes": "; ".join(est.notes),
            }
        )
    return pd.DataFrame(rows, columns=COMPONENT_COLUMNS)


# The table as summary and report show it: sds in % of tok/s (ln-scale sd), each with its df.
DISPLAY_HEADERS = [
    "model",
    "lever",
    "K",
    "within-engine sd % (df)",
    "between-launch sd % (df)",
    "between-session sd % (df)",
    "per-run sd % (df) [90% interval]",
    "blocks/launches/sessions",
    "missing because",
]
DISPLAY_NOTE = (
    "variance components of ln out tok/s per model and lever (VALID cells, corpus means removed; "
    "analysis/variance.py): within-engine = block to block inside one engine launch, between-launch = "
    "launch to launch inside a session, between-session; per-run = within-engine and between-launch "
    "together (one run on a launch of its own: what `python -m analysis.power --store` uses), with "
    "its 90% interval (few launches: a wide one, and repeats advice that goes as its square); "
    "- = the data cannot estimate it (why: last column), never 0"
)


def _sd_words(sd: float, df: float) -> str:
    if math.isnan(sd):
        return "-"
    return f"{sd:.1%} ({df:.0f})" if not math.isnan(df) else f"{sd:.1%}"


def _interval_words(lo: float, hi: float) -> str:
    return "" if math.isnan(lo) else f" [{lo:.1%}, {hi:.1%}]"


def display_rows(table: pd.DataFrame) -> list[list[str]]:
    """variance_components' rows as text, DISPLAY_HEADERS' order."""
    return [
        [
            str(row.model),
            str(row.lever),
            str(row.k or "-"),
            _sd_words(row.sd_block, row.df_block),
            _sd_words(row.sd_launch, row.df_launch),
            _sd_words(row.sd_session, row.df_session),
            _sd_words(row.sd_run, row.df_run) + _interval_words(row.sd_run_lo, row.sd_run_hi),
            f"{row.n_blocks}/{row.n_launches}/{row.n_sessions}",
            str(row.notes or "-"),
        ]
        for row in table.itertuples(index=False)
    ]

"""Drift between and within sessions, measured by each session's anchor runs. Pure.

Every session runs one anchor cell (by default `van` on the first model and
corpus) first, again last and, with grid.anchor.runs = n > 2, n - 2 times in
between (grid/plan/anchor.py: 'start', 'mid1' .. 'mid<n-2>', 'end'); its summary rows
carry that position in `anchor` (null for every other cell). Definitions, over
VALID anchor runs only:

  within-session drift of session s (relative range, shown per session):
      drift_rel(s) = (max a - min a) / mean a,  a = the session's anchor tok/s
  anchor pairs of session s: its anchor runs in time order (start, ..., end),
      each consecutive pair (a_i, a_i+1) gives d = ln a_i+1 - ln a_i;
      n_anchor_pairs(s) = how many, anchor_log_ss(s) = sum of d^2
  drift trend of session s (n >= 3 anchor runs): the least-squares line
      ln a_i = alpha + beta u_i, u_i = the run's place in the session from 0 (first
      anchor) to 1 (last): its window start where every run records one, else its
      rank in the anchor order. beta is the drift over the whole session (ln units);
      se(beta) = s_e / sqrt(sum (u_i - mean u)^2), s_e^2 = residual SS / (n - 2);
      trend_bound(s) = |beta| + t_{0.95, n-2} se(beta), the far end from 0 of
      beta's 90 % interval: the most the trend can be, given the anchors.
      Each anchor run carries its launch's noise; the line's residuals take that
      scatter out of the drift estimate instead of calling it drift, and more
      anchor runs narrow the interval (simulated, 11.8 % launch noise and no drift,
      2,000 sessions: median trend_bound 0.85 at 3 runs, 0.44 at 5, 0.32 at 9, 0.23
      at 17; a real 10 % drift is covered 98.4-100 % of the time, where the start/end
      difference covers it 63.6 %: tests/unit/analysis/test_drift.py).
  what the trend moves a comparison: a comparison whose two sides' runs lie a
      share `lag` of the session apart moves by at most trend_bound(s) x lag.
      Comparisons paired by repeat inside one session (analysis.decision) have each
      pair's two runs in one repeat block (grid/config/expand.py runs repeat by repeat,
      the order reversed on odd repeats), so lag = 1 / (pairs in the session);
      every other comparison takes lag = 1 (the whole session).
  pooled pair drift of sessions with exactly two anchor runs (start and end, the
      layout before grid.anchor.runs; their drift cannot be told from launch noise):
      pooled_rel(S) = DRIFT_FACTOR * sqrt(sum_s anchor_log_ss(s) / sum_s n_anchor_pairs(s))
      i.e. the root mean square of the anchor log differences, times DRIFT_FACTOR = 1,
      whatever the lag: it holds the launch noise of both runs (sqrt(2) sigma_launch),
      which a paired interval carries already, so these sessions keep the old, strict band.
  between-session drift of sessions S (same anchor cell):
      between_rel(S) = (max_s m_s - min_s m_s) / mean_s m_s,  m_s = mean anchor tok/s of s
  drift band of a comparison whose numbers come from sessions S:
      band(S, lag) = max(max over trend sessions of trend_bound(s) x lag,
                         pooled_rel(two-run sessions of S), between_rel(S))
      (between_rel = 0 for one session)

analysis.decision calls a difference real only when its whole interval lies
beyond band(S, lag); NaN (drift unknown, nothing judged) when a session in S has
fewer than two valid anchor runs or the sessions of S did not all run the same
anchor cell. Drift tables without the pair columns (built by hand) count each
session's drift_rel as one pair; tables without the trend columns use the pairs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import pandas as pd

from analysis.decision import ByLag, t_quantile
from analysis.repeats import valid_only

ANCHOR = "anchor"
ANCHOR_FIELDS = ["model", "corpus", "lever", "k"]
DRIFT_COLUMNS = [
    "session_id",
    *ANCHOR_FIELDS,
    "n_anchor_runs",
    "anchor_start_tok_per_s",
    "anchor_end_tok_per_s",
    "anchor_mean_tok_per_s",
    "drift_rel",
    "n_anchor_pairs",
    "anchor_log_ss",
    "anchor_trend",
    "anchor_trend_se",
    "anchor_trend_df",
    "trend_bound",
]
DRIFT_FACTOR = 1.0
TREND_CONFIDENCE = 0.90  # beta's interval, as analysis.decision's (each one-sided error 5 %)
MIN_TREND_RUNS = 3  # a line through two runs has no residual: drift and launch noise are one number


def split_anchors(cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(measured cells, anchor runs): rows whose `anchor` is null, and rows whose `anchor` is set.

    Stores written before anchors existed have no `anchor` column: all rows are measured.
    """
    if ANCHOR not in cells:
        return cells, cells.iloc[0:0]
    is_anchor = cells[ANCHOR].notna()
    return cells[~is_anchor], cells[is_anchor]


def spread_rel(values: pd.Series) -> float:
    """(max - min) / mean of `values`; NaN for fewer than two values or a non-positive mean."""
    if len(values) < 2 or not values.mean() > 0:
        return math.nan
    return float((values.max() - values.min()) / values.mean())


def _position_mean(runs: pd.DataFrame, position: str) -> float:
    values = runs.loc[runs[ANCHOR] == position, "output_tok_per_s"]
    return float(values.mean()) if len(values) else math.nan


def anchor_rank(position: object) -> float:
    """Order of an anchor position: 'start' first, 'mid1', 'mid2', ... in number order, 'end' last."""
    if position == "start":
        return 0.0
    if position == "end":
        return math.inf
    text = str(position)
    return float(text[3:]) if text.startswith("mid") and text[3:].isdigit() else 0.5


def _in_order(runs: pd.DataFrame) -> pd.DataFrame:
    """A session's positive anchor runs in time order (window start where all have one, else position)."""
    runs = runs[runs["output_tok_per_s"] > 0]
    timed = "window_start_ns" in runs and runs["window_start_ns"].notna().all()
    key = runs["window_start_ns"].astype(float) if timed else runs[ANCHOR].map(anchor_rank)
    order = runs.assign(_order=key.to_numpy(), _timed=timed)
    return order.sort_values("_order", kind="stable").reset_index(drop=True)


def anchor_pairs(order: pd.DataFrame) -> tuple[int, float]:
    """(n_anchor_pairs, anchor_log_ss) of one session's anchor runs (module doc) in time order
    (_in_order: start first, end last)."""
    values = order["output_tok_per_s"].tolist()
    diffs = [math.log(b) - math.log(a) for a, b in itertools.pairwise(values)]
    return len(diffs), float(sum(d * d for d in diffs))


def places(runs: pd.DataFrame) -> list[float]:
    """u_i of the module doc for runs already in time order: 0 for the first, 1 for the last."""
    n = len(runs)
    if n < 2:
        return [0.0] * n
    if bool(runs["_timed"].iloc[0]):
        t = runs["_order"].astype(float)
        span = float(t.iloc[-1] - t.iloc[0])
        if span > 0:
            return [float(v) for v in (t - t.iloc[0]) / span]
    return [i / (n - 1) for i in range(n)]


def trend(
    u: list[float], y: list[float], confidence: float = TREND_CONFIDENCE
) -> tuple[float, float, int, float]:
    """(beta, se(beta), df, trend_bound) of ln anchor tok/s y on place u (module doc); NaNs below 3 runs."""
    n = len(y)
    mean_u, mean_y = sum(u) / n if n else 0.0, sum(y) / n if n else 0.0
    sxx = sum((a - mean_u) ** 2 for a in u)
    if n < MIN_TREND_RUNS or sxx <= 0:
        return math.nan, math.nan, max(n - 2, 0), math.nan
    beta = sum((a - mean_u) * (b - mean_y) for a, b in zip(u, y, strict=True)) / sxx
    alpha = mean_y - beta * mean_u
    rss = sum((b - alpha - beta * a) ** 2 for a, b in zip(u, y, strict=True))
    df = n - 2
    se = math.sqrt(rss / df / sxx)
    q = 1.0 - (1.0 - confidence) / 2.0
    return beta, se, df, abs(beta) + t_quantile(q, df) * se


def session_trend(order: pd.DataFrame) -> tuple[float, float, int, float]:
    """trend() of one session's anchor runs in time order (_in_order)."""
    y = [math.log(v) for v in order["output_tok_per_s"]]
    return trend(places(order), y)


def session_drift(anchors: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """One row per (session, anchor cell): start, end and mean anchor tok/s and drift_rel (module doc).

    The second value is how many INVALID anchor runs were left out.
    """
    if anchors.empty:
        return pd.DataFrame(columns=DRIFT_COLUMNS), 0
    kept, excluded = valid_only(anchors, include_invalid)
    kept = kept[kept["output_tok_per_s"].notna()]
    rows = []
    for keys, runs in kept.groupby(["session_id", *ANCHOR_FIELDS], dropna=False, sort=True):
        values = runs["output_tok_per_s"]
        order = _in_order(runs)  # once: the sort is most of a session's cost in the simulations
        n_pairs, log_ss = anchor_pairs(order)
        beta, se, df, bound = session_trend(order)
        rows.append(
            {
                **dict(zip(["session_id", *ANCHOR_FIELDS], keys, strict=True)),
                "n_anchor_runs": len(values),
                "anchor_start_tok_per_s": _position_mean(runs, "start"),
                "anchor_end_tok_per_s": _position_mean(runs, "end"),
                "anchor_mean_tok_per_s": float(values.mean()),
                "drift_rel": spread_rel(values),
                "n_anchor_pairs": n_pairs,
                "anchor_log_ss": log_ss,
                "anchor_trend": beta,
                "anchor_trend_se": se,
                "anchor_trend_df": df,
                "trend_bound": bound,
            }
        )
    return pd.DataFrame(rows, columns=DRIFT_COLUMNS), excluded


def _anchor_cell(drift: pd.DataFrame, sessions: list[str]) -> pd.DataFrame:
    """The rows of the anchor cell that most of `sessions` ran (one row per session)."""
    rows = drift[drift["session_id"].isin(sessions)]
    if rows.empty:
        return rows
    counts = rows.groupby(ANCHOR_FIELDS, dropna=False).size()
    cell = counts.idxmax()
    mask = (rows[ANCHOR_FIELDS] == pd.Series(cell, index=ANCHOR_FIELDS)).all(axis=1)
    return rows[mask]


def between_session_drift(drift: pd.DataFrame, sessions: Iterable[str]) -> float:
    """between_rel(S) (module doc); 0 for one session, NaN when not all of S ran the same anchor."""
    wanted = sorted(set(sessions))
    if len(wanted) <= 1:
        return 0.0
    rows = _anchor_cell(drift, wanted)
    if len(rows) < len(wanted):
        return math.nan
    return spread_rel(rows["anchor_mean_tok_per_s"])


def _has_trend(rows: pd.DataFrame) -> bool:
    """A session's rows measured a trend: n >= 3 anchor runs and a finite trend_bound."""
    if "trend_bound" not in rows:
        return False
    return bool(rows["trend_bound"].notna().all() and (rows["n_anchor_runs"] >= MIN_TREND_RUNS).all())


def pooled_drift(drift: pd.DataFrame, sessions: Iterable[str]) -> float:
    """pooled_rel(S) (module doc) over every session of S; NaN when one has no anchor pair (drift unknown)."""
    wanted = sorted(set(sessions))
    if not wanted:
        return math.nan
    pairs, ss = 0, 0.0
    for session in wanted:
        rows = drift[drift["session_id"] == session]
        if rows.empty or rows["drift_rel"].isna().any():
            return math.nan
        if "n_anchor_pairs" in rows and "anchor_log_ss" in rows and rows["n_anchor_pairs"].notna().all():
            pairs += int(rows["n_anchor_pairs"].sum())
            ss += float(rows["anchor_log_ss"].sum())
        else:  # a hand-built table: each drift_rel is one pair
            pairs += len(rows)
            ss += float((rows["drift_rel"] ** 2).sum())
    return DRIFT_FACTOR * math.sqrt(ss / pairs) if pairs else math.nan


def within_drift(drift: pd.DataFrame, sessions: Iterable[str], lag: float = 1.0) -> float:
    """The within-session part of band(S, lag) (module doc): trend sessions' trend_bound x lag,
    two-run sessions' pooled pair drift; NaN when a session of S has no anchor pair."""
    wanted = sorted(set(sessions))
    if not wanted:
        return math.nan
    terms, paired_only = [], []
    for session in wanted:
        rows = drift[drift["session_id"] == session]
        if rows.empty or rows["drift_rel"].isna().any():
            return math.nan
        if _has_trend(rows):
            terms.append(float(rows["trend_bound"].max()) * lag)
        else:
            paired_only.append(session)
    if paired_only:
        terms.append(pooled_drift(drift, paired_only))
    # Any unknown term makes the whole band unknown: max() would drop a NaN that is not first.
    return math.nan if any(math.isnan(term) for term in terms) else max(terms)


def drift_band(drift: pd.DataFrame, sessions: Iterable[str], lag: float = 1.0) -> float:
    """band(S, lag) (module doc); NaN when the within- or between-session term is unknown.

    `lag`: the share of a session between the two sides' runs (1: the whole session,
    the default; analysis.decision passes 1 / pairs for a comparison paired by repeat).
    Both terms must be known: Python's max(0.009, nan) is 0.009, so an unknown
    between-session term (sessions that did not all run the same anchor) would
    otherwise shrink the band silently to the within-session drift.
    """
    wanted = sorted(set(sessions))
    within = within_drift(drift, wanted, lag)
    between = between_session_drift(drift, wanted)
    if math.isnan(within) or math.isnan(between):
        return math.nan
    return max(within, between)


def band_by_lag(drift: pd.DataFrame, sessions: Iterable[str]) -> ByLag:
    """lag -> drift_band(drift, sessions, lag): what analysis.decision.judge takes to scale the band
    by the comparison's own lag (1 / pairs when paired by repeat, else 1)."""
    wanted = sorted(set(sessions))
    return ByLag(lambda lag: drift_band(drift, wanted, lag))

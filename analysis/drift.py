"""Drift between and within sessions, measured by each session's anchor runs. Pure.

Every session runs one anchor cell (by default `van` on the first model and
corpus) first and again last; its summary rows carry `anchor` = 'start' / 'end'
(null for every other cell). Definitions, over VALID anchor runs only:

  within-session drift of session s (relative range, shown per session):
      drift_rel(s) = (max a - min a) / mean a,  a = the session's anchor tok/s
      = |end - start| / ((start + end) / 2) with one start and one end run
  anchor pairs of session s: its anchor runs in time order (start, ..., end),
      each consecutive pair (a_i, a_i+1) gives d = ln a_i+1 - ln a_i;
      n_anchor_pairs(s) = how many, anchor_log_ss(s) = sum of d^2
  pooled drift of sessions S (every anchor pair of every session in S):
      pooled_rel(S) = DRIFT_FACTOR * sqrt(sum_s anchor_log_ss(s) / sum_s n_anchor_pairs(s))
      i.e. the root mean square of the anchor log differences (the SD of the
      drift between two runs of the same cell, taking its mean as 0), times
      DRIFT_FACTOR = 1. With one session of one start and one end run this is
      |ln(end / start)|, which differs from drift_rel(s) by less than 0.1 % of it
      for drifts under 5 %; with more sessions (or more anchor runs) it pools
      every pair instead of taking the worst single one.
  between-session drift of sessions S (same anchor cell):
      between_rel(S) = (max_s m_s - min_s m_s) / mean_s m_s,  m_s = mean anchor tok/s of s
  drift band of a comparison whose numbers come from sessions S:
      band(S) = max(pooled_rel(S), between_rel(S))   (between_rel = 0 for one session)

analysis.decision calls a difference real only when its whole interval lies
beyond band(S); NaN (drift unknown, nothing judged) when a session in S has fewer
than two valid anchor runs or the sessions of S did not all run the same anchor
cell. Drift tables without the pair columns (built by hand) count each session's
drift_rel as one pair.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import pandas as pd

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
]
DRIFT_FACTOR = 1.0
POSITION_ORDER = {"start": 0, "end": 2}


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


def anchor_pairs(runs: pd.DataFrame) -> tuple[int, float]:
    """(n_anchor_pairs, anchor_log_ss) of one session's anchor runs (module doc): start first, end last."""
    order = runs.assign(_pos=runs[ANCHOR].map(POSITION_ORDER).fillna(1)).reset_index(drop=True)
    values = order.sort_values("_pos", kind="stable")["output_tok_per_s"].tolist()
    values = [v for v in values if v > 0]
    diffs = [math.log(b) - math.log(a) for a, b in itertools.pairwise(values)]
    return len(diffs), float(sum(d * d for d in diffs))


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
        n_pairs, log_ss = anchor_pairs(runs)
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


def pooled_drift(drift: pd.DataFrame, sessions: Iterable[str]) -> float:
    """pooled_rel(S) (module doc); NaN when a session in S has no anchor pair (drift unknown)."""
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


def drift_band(drift: pd.DataFrame, sessions: Iterable[str]) -> float:
    """band(S) = max(pooled_rel(S), between_rel(S)); NaN when either is unknown.

    Both terms must be known: Python's max(0.009, nan) is 0.009, so an unknown
    between-session term (sessions that did not all run the same anchor) would
    otherwise shrink the band silently to the within-session drift.
    """
    wanted = sorted(set(sessions))
    pooled = pooled_drift(drift, wanted)
    between = between_session_drift(drift, wanted)
    if math.isnan(pooled) or math.isnan(between):
        return math.nan
    return max(pooled, between)


def reference_session(drift: pd.DataFrame) -> str | None:
    """The first session (ids sort by start time) with an anchor mean: the default normalisation base."""
    known = drift[drift["anchor_mean_tok_per_s"].notna()].sort_values("session_id")
    return None if known.empty else str(known["session_id"].iloc[0])


def normalise_by_anchor(
    cells: pd.DataFrame, drift: pd.DataFrame, reference: str | None = None
) -> pd.DataFrame:
    """Add output_tok_per_s_norm = output_tok_per_s / m_s * m_ref (m = mean anchor tok/s of a session).

    It takes out the drift between sessions: every session's anchor becomes the
    reference session's. Only sessions that ran the reference session's anchor
    cell get a value; the others (and sessions without anchors) get NaN.
    """
    reference = reference or reference_session(drift)
    out = cells.copy()
    out["output_tok_per_s_norm"] = math.nan
    if reference is None:
        return out
    base = drift[drift["session_id"] == reference].iloc[0]
    same = (drift[ANCHOR_FIELDS] == base[ANCHOR_FIELDS]).all(axis=1)
    means = drift[same].set_index("session_id")["anchor_mean_tok_per_s"]
    factor = float(base["anchor_mean_tok_per_s"]) / out["session_id"].map(means)
    out["output_tok_per_s_norm"] = out["output_tok_per_s"] * factor
    return out

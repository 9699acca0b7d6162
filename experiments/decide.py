"""The tuning procedure's decisions, from measured figures alone. Pure: no runs, no I/O.

Each stage proposes one change to the incumbent configuration (one variable at
a time) and keeps it only when the evidence says so, by the one rule of
analysis.decision (the same rule as the study's Table 1 and best K):

  score(config) = per repeat (session_id, repeat): its tok/s on `final_corpus`
                  when it was measured, else the geometric mean over the corpora
                  (each corpus at the config's K for that corpus), for repeat keys
                  present on every corpus (or a repeat measured once per corpus in
                  different sessions: analysis.decision.geomean_repeats); the figure shown is the geometric
                  mean of those per-repeat scores
  band          = analysis.drift.drift_band over the sessions both ran in, at the
                  comparison's lag (analysis.drift.band_by_lag: a stage pairs van,
                  incumbent and candidate by repeat in one session, so the band is
                  the anchors' trend x 1 / repeats; with start and end anchors only,
                  their difference as before)
                  (unknown drift: not judged, never a keep; the rule fails closed)
  judgement     = analysis.decision.judge(candidate scores, incumbent scores,
                  max(band, rules.min_gain)): ratio, its 90 % t-interval, label,
                  and the noise terms the interval carries
  gain          = judgement ratio - 1
  keep          iff the judgement is a 'real gain' (interval wholly above 1 + band)
                  and, given the cells (`cells`), the candidate is not a dynamic-K lever whose
                  every recorded step used one K ('fixed K in effect': refused, not kept as what
                  it is: that fixed K is the K sweep's configuration, judged there)
                  and the candidate's verdict for this model is 'pass' on every corpus at its
                  K there (analysis/gate.py; none or no_reference is no pass): with a GateLook
                  and rules.pool_gate (the tune), one paired test per corpus over every session
                  of the tune that measured the candidate so far, pooled (analysis.gate.
                  pooled_verdicts), held to the look's pass rate for an identical lever
                  (analysis.equivalence.look_pass_rate: a keep spends gate_keep_share of the
                  path's budget 1 - gate_path_pass, the confirmation the rest, split over the
                  corpora); without, its latest verdict
                  and, for MoE models, no corpus is a 'real loss'

Given the cells behind the medians (`cells`), a decision's reason also names what else the
candidate's engines ran with unlike the incumbent's, beyond what the lever changes by design
(analysis/effective.py: 'also differs: model runner V2 vs V1'), so a gain that holds another
change says so.

The K sweep first chooses a K by the study's best-K rule (analysis/best_k.py:
analysis.decision.choose_smallest with k_bands): the smallest K over which the
top K (highest score) is not a real gain, each comparison's band over the
sessions both K ran in. The chosen K is
then a change like any other, kept only when it beats the incumbent.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field
from typing import Any

import pandas as pd

from analysis.best_k import k_bands
from analysis.decision import (
    NO_BAND,
    NOT_JUDGED,
    Band,
    ByLag,
    Judgement,
    band_at,
    choose_smallest,
    geomean_repeats,
    judge,
)
from analysis.drift import band_by_lag
from analysis.effective import also_differs, fixed_k, fixed_k_words
from analysis.equivalence import KEEP_SHARE, PATH_PASS, at_pass_rate, look_pass_rate
from analysis.gate import gate_problems, latest_verdicts, pooled_verdicts
from analysis.stats import geometric_mean
from vocab.schema import EquivalenceConfig

KEEP, REJECT, SKIP, CHOSE = "keep", "reject", "skip", "chose"


@dataclass
class TuneRules:
    """The procedure's rules as configuration (conf/tune/tune.yaml `rules`)."""

    # A change must gain more than this as well as more than the drift band.
    min_gain: float = 0.0
    # Kept for old configs and ignored: with the drift unknown nothing is judged,
    # in tune as in the study's analysis (analysis/decision.py: fail closed).
    unknown_drift_band: float = 0.05
    # Only levers with a 'pass' for this model on every corpus are kept (analysis/gate.py).
    require_equivalence: bool = True
    # MoE models: a change that slows any corpus beyond drift is rejected.
    moe_regression_check: bool = True
    # The gate on a lever's path (issue 44): judged per corpus on the pooled paired counts of every
    # session of this tune that measured the lever at its K (analysis.gate.pooled_verdicts), at a keep
    # on what was measured so far, at the confirmation on all of it; not on one session's verdict
    # each time (false: the latest verdict, as before). Each look on one session's verdict at 95 %
    # passed an identical lever ~92 % over the path (two looks, two corpora).
    pool_gate: bool = True
    # How often a lever identical to van clears the gate over its whole path (every look, every
    # corpus) when the gate is pooled: the budget 1 - gate_path_pass is split over the corpora and
    # the two looks (analysis.equivalence.look_pass_rate), gate_keep_share of it to the keep.
    gate_path_pass: float = PATH_PASS
    gate_keep_share: float = KEEP_SHARE


@dataclass(frozen=True)
class GateLook:
    """What a decision judges the gate on when it is pooled (TuneRules.pool_gate): the tune's cells so
    far (their sessions' paired counts pool), the gate's thresholds (the grid's gates.equivalence)
    and whether this is the confirmation (the final look) or a keep."""

    cell_keys: frozenset[str]
    cfg: EquivalenceConfig
    final: bool = False

    def cfg_for(self, rules: TuneRules, corpora: int) -> EquivalenceConfig:
        """The gate's thresholds at this look: an identical lever's pass rate on one corpus."""
        rate = look_pass_rate(rules.gate_path_pass, corpora, self.final, rules.gate_keep_share)
        return at_pass_rate(self.cfg, rate)


@dataclass(frozen=True)
class LeverConfig:
    """A serving configuration: a lever and its K per corpus (0 for levers without drafts)."""

    lever: str
    k_by_corpus: tuple[tuple[str, int], ...]

    @classmethod
    def uniform(cls, lever: str, k: int, corpora: Sequence[str]) -> LeverConfig:
        return cls(lever, tuple((c, k) for c in corpora))

    def k(self, corpus: str) -> int:
        return dict(self.k_by_corpus)[corpus]

    @property
    def label(self) -> str:
        ks = sorted({k for _, k in self.k_by_corpus})
        if ks == [0]:
            return self.lever
        return f"{self.lever} K=" + "/".join(str(k) for k in ks)


@dataclass
class Decision:
    """One stage's outcome and its evidence."""

    stage: str
    candidate: str
    incumbent: str
    decision: str
    reason: str
    candidate_tok_per_s: float = math.nan
    incumbent_tok_per_s: float = math.nan
    gain: float = math.nan
    band: float = math.nan
    gate: str = ""
    per_corpus: dict[str, Any] = field(default_factory=dict)
    ci_lo: float = math.nan
    ci_hi: float = math.nan
    n_repeats: str = ""
    label: str = ""
    # What else the candidate's engines ran with unlike the incumbent's (analysis/effective.py).
    also_differs: str = ""


# The last medians table indexed by (corpus, lever, K), and the last verdict table's latest verdicts
# indexed by (model, lever, K, corpus): a tune's decision looks rows up dozens of times in one table,
# and a boolean filter (or a pandas row) per look-up made the procedure's simulation
# (experiments/procedure_power.py) spend most of its time in pandas. The key is the table's identity:
# each table is held so its id cannot be reused while cached, and callers never change a table in
# place (Tune.evidence and SimulatedTune.evidence build new ones), which would leave the index stale.
_INDEXED: tuple[pd.DataFrame | None, dict[tuple[str, str, int], dict[str, Any]]] = (None, {})
_LATEST: tuple[pd.DataFrame | None, pd.DataFrame, dict[tuple[str, str, object, str], str]] = (
    None,
    pd.DataFrame(),
    {},
)


def _row(medians: pd.DataFrame, config: LeverConfig, corpus: str) -> dict[str, Any] | None:
    global _INDEXED
    if _INDEXED[0] is not medians:
        index: dict[tuple[str, str, int], dict[str, Any]] = {}
        columns = list(medians.columns)
        for values in zip(*(medians[c].tolist() for c in columns), strict=True):
            row = dict(zip(columns, values, strict=True))
            index.setdefault((row["corpus"], row["lever"], int(row["k"])), row)  # the first, as iloc[0]
        _INDEXED = (medians, index)
    return _INDEXED[1].get((corpus, config.lever, config.k(corpus)))


def _latest(verdicts: pd.DataFrame) -> tuple[pd.DataFrame, dict[tuple[str, str, object, str], str]]:
    """analysis.gate.latest_verdicts of `verdicts`, and each key's verdict (the table's last row)."""
    global _LATEST
    if _LATEST[0] is not verdicts:
        latest = latest_verdicts(verdicts)
        keys = zip(
            latest["model"], latest["lever"], latest["k"], latest["corpus"], latest["verdict"], strict=True
        )
        _LATEST = (verdicts, latest, {(m, lv, k, c): v for m, lv, k, c, v in keys})  # 8.0 finds 8
    return _LATEST[1], _LATEST[2]


# The last pooled verdict table (pooled_verdicts), its index, and the verdict table it was pooled from
# (held, so its id cannot be reused while cached), per (that table, the tune's cells, the thresholds).
_POOLED: tuple = (None, pd.DataFrame(), {}, None)


def _gate_table(
    verdicts: pd.DataFrame, rules: TuneRules, look: GateLook | None, corpora: int
) -> tuple[pd.DataFrame, dict[tuple[str, str, object, str], str]]:
    """The verdict table a decision's gate reads, and each key's verdict: pooled over the tune's cells
    at the look's pass rate (GateLook, rules.pool_gate), else the latest verdicts (_latest)."""
    global _POOLED
    if look is None or not rules.pool_gate:
        return _latest(verdicts)
    cfg = look.cfg_for(rules, corpora)
    key = (id(verdicts), look.cell_keys, astuple(cfg))
    if _POOLED[0] != key or _POOLED[3] is not verdicts:
        table = pooled_verdicts(verdicts, look.cell_keys, cfg)
        keys = zip(table["model"], table["lever"], table["k"], table["corpus"], table["verdict"], strict=True)
        _POOLED = (key, table, {(m, lv, k, c): v for m, lv, k, c, v in keys}, verdicts)
    return _POOLED[1], _POOLED[2]


def _corpora(config: LeverConfig, final_corpus: str) -> list[str]:
    return [final_corpus] if final_corpus in dict(config.k_by_corpus) else [c for c, _ in config.k_by_corpus]


def score_repeats(
    medians: pd.DataFrame, config: LeverConfig, final_corpus: str
) -> tuple[tuple[tuple[str, int, float], ...], set[str]]:
    """The per-repeat scores of `config` (module doc) and their sessions; () when a corpus is missing."""
    rows = [_row(medians, config, c) for c in _corpora(config, final_corpus)]
    if any(r is None for r in rows):
        return (), set()
    sessions = {s for r in rows for s in r["sessions"]}
    repeats = tuple(rows[0]["repeats"]) if len(rows) == 1 else geomean_repeats([r["repeats"] for r in rows])
    return repeats, sessions


def score(medians: pd.DataFrame, config: LeverConfig, final_corpus: str) -> tuple[float, set[str]]:
    """score(config) (module doc) and the sessions its figures come from; NaN when a corpus is missing."""
    repeats, sessions = score_repeats(medians, config, final_corpus)
    return geometric_mean(v for _, _, v in repeats), sessions


def band_for(drift: pd.DataFrame, sessions: set[str], rules: TuneRules) -> tuple[Band, str]:
    """The drift band as lag -> band (NaN when unknown: nothing is judged, the rule fails closed),
    and its words at lag 1 (the whole session)."""
    # Remembered per lag: judge, the band's words and best K's ties ask it again and again, each
    # time a pass over the drift table (most of a simulated tune's time, procedure_power).
    of_lag = functools.cache(band_by_lag(drift, sessions).of_lag) if sessions and not drift.empty else None
    band = of_lag(1.0) if of_lag is not None else math.nan  # drift_band(drift, sessions)
    if math.isnan(band):
        return (
            math.nan,
            "drift unknown (a missing or INVALID anchor run, or sessions without a common anchor)",
        )
    return ByLag(of_lag), f"drift band {band:.1%}"


def band_words(band: Band, j: Judgement) -> str:
    """'drift band 1.2% (session trend 6.0% x 1/5 paired)' as the judgement applied it."""
    whole, applied = band_at(band, 1.0), band_at(band, j.lag)
    if math.isnan(applied):
        return "drift unknown (a missing or INVALID anchor run, or sessions without a common anchor)"
    if j.lag < 1.0 and applied < whole:
        return f"drift band {applied:.1%} (session trend {whole:.1%} x {j.lag:.2g} paired)"
    return f"drift band {applied:.1%}"


def with_floor(band: Band, floor: float) -> Band:
    """max(band, floor) at every lag; NaN stays NaN (max(nan, x) would not)."""
    if callable(band):
        return ByLag(lambda lag: b if math.isnan(b := band(lag)) else max(b, floor))
    return band if math.isnan(band) else max(band, floor)


def _judged(decision: Decision, j: Judgement) -> None:
    decision.gain, decision.ci_lo, decision.ci_hi, decision.label = j.ratio - 1, j.lo, j.hi, j.label
    decision.n_repeats = f"{j.n_value}/{j.n_reference}" + (" paired" if j.paired else "")


def failed_gates(verdicts: pd.DataFrame, model: str, config: LeverConfig, latest: bool = False) -> list[str]:
    """Corpora where the candidate has not cleared the equivalence gate for `model` (analysis/gate.py).

    latest: `verdicts` is already analysis.gate.latest_verdicts' table."""
    return gate_problems(verdicts if latest else latest_verdicts(verdicts), model, config.lever,
                         config.k_by_corpus)  # fmt: skip


def gate_words(latest: dict[tuple[str, str, object, str], str], model: str, config: LeverConfig) -> str:
    """The candidate's latest verdict for `model` per corpus, e.g. 'code_complete pass, chat_bench fail',
    from _latest's index (a look-up per corpus, not a filter of the table)."""
    found = [(c, latest.get((model, config.lever, k, c))) for c, k in config.k_by_corpus]
    return ", ".join(f"{c} {v}" for c, v in found if v is not None) or "no verdict"


def config_cells(
    cells: pd.DataFrame | None, model: str, config: LeverConfig, final_corpus: str
) -> list[dict]:
    """The VALID cells of `config` for `model` that its score is made of (each corpus at its K)."""
    if cells is None or cells.empty or not {"lever", "corpus", "k"} <= set(cells.columns):
        return []
    ks = {c: config.k(c) for c in _corpora(config, final_corpus)}
    rows = cells[(cells["lever"] == config.lever) & cells["corpus"].isin(set(ks))]
    if "model" in rows:
        rows = rows[rows["model"] == model]
    if "valid" in rows:
        rows = rows[rows["valid"].fillna(False).astype(bool)]
    return [r for r in rows.to_dict("records") if r["k"] == ks[r["corpus"]]]


def decide_change(
    stage: str,
    incumbent: LeverConfig,
    candidate: LeverConfig,
    medians: pd.DataFrame,
    drift: pd.DataFrame,
    verdicts: pd.DataFrame,
    rules: TuneRules,
    final_corpus: str,
    moe: bool,
    model: str,
    cells: pd.DataFrame | None = None,
    look: GateLook | None = None,
) -> Decision:
    """Keep `candidate` over `incumbent` or not (module doc), with the figures that decided it.

    cells: the measured cells behind `medians` (analysis.load.measured_cells), for what their
    engines ran with; None: not read (no 'also differs', no fixed-K check).
    look: the tune's cells so far and the gate's thresholds, for the pooled gate (GateLook); None:
    the latest verdicts."""
    mine = config_cells(cells, model, candidate, final_corpus)
    differs = also_differs(mine, config_cells(cells, model, incumbent, final_corpus))
    new_repeats, new_sessions = score_repeats(medians, candidate, final_corpus)
    old_repeats, old_sessions = score_repeats(medians, incumbent, final_corpus)
    new = geometric_mean(v for _, _, v in new_repeats)
    old = geometric_mean(v for _, _, v in old_repeats)
    decision = Decision(stage, candidate.label, incumbent.label, REJECT, "", new, old, also_differs=differs)
    verdicts, index = _gate_table(verdicts, rules, look, len(candidate.k_by_corpus))
    decision.gate = gate_words(index, model, candidate)
    if math.isnan(new) or math.isnan(old):
        decision.reason = "no valid measurement of " + (
            candidate.label if math.isnan(new) else incumbent.label
        )
        return _with_differs(decision)
    band, _ = band_for(drift, new_sessions | old_sessions, rules)
    # NaN stays NaN: judge then says 'not judged (drift unknown)'.
    j = judge(new_repeats, old_repeats, with_floor(band, rules.min_gain))
    decision.band = band_at(band, j.lag)
    band_text = band_words(band, j)
    _judged(decision, j)
    for corpus, _ in candidate.k_by_corpus:
        a, b = _row(medians, candidate, corpus), _row(medians, incumbent, corpus)
        if a is not None and b is not None:
            decision.per_corpus[corpus] = judge(a["repeats"], b["repeats"], band).ratio - 1
    if (fixed := fixed_k(mine)) is not None:
        decision.reason = (
            f"{fixed_k_words(fixed)} of its cells (dynk_steps_by_k_json): not dynamic K, so not kept as it; "
            f"the K={fixed} it ran is a fixed-K configuration, judged by the K sweep"
        )
        return _with_differs(decision)
    if rules.require_equivalence and (failed := failed_gates(verdicts, model, candidate, latest=True)):
        decision.reason = "output-equivalence gate failed (" + "; ".join(failed) + ")"
        return _with_differs(decision)
    if moe and rules.moe_regression_check:
        slower = [
            c
            for c, _ in candidate.k_by_corpus
            if (a := _row(medians, candidate, c)) is not None
            and (b := _row(medians, incumbent, c)) is not None
            and judge(a["repeats"], b["repeats"], band).real_loss
        ]
        if slower:
            decision.reason = f"MoE model: a real loss beyond drift on {', '.join(slower)}"
            return _with_differs(decision)
    applied = 0.0 if math.isnan(decision.band) else decision.band
    words = f"{j.interval_words()} ({j.noise_terms}), {band_text}" + (
        f", min_gain {rules.min_gain:.1%}" if rules.min_gain > applied else ""
    )
    if j.real_gain:
        decision.decision = KEEP
        decision.reason = f"real gain: {words}"
    elif j.real_loss:
        decision.reason = f"real loss (slower): {words}"
    elif j.label == NOT_JUDGED:
        decision.reason = f"not judged, fewer than 2 repeats on a side: {words}"
    elif j.label == NO_BAND:
        decision.reason = f"not judged, the drift is unknown so no interval can clear it: {words}"
    else:
        decision.reason = f"within noise: {words}: not evidence of a gain"
    return _with_differs(decision)


def _with_differs(decision: Decision) -> Decision:
    """`decision` with what else its candidate's engines ran with (also_differs) added to its reason."""
    if decision.also_differs:
        decision.reason += f"; {decision.also_differs}"
    return decision


def choose_k(
    lever: str,
    ks: Sequence[int],
    corpora: Sequence[str],
    medians: pd.DataFrame,
    drift: pd.DataFrame,
    rules: TuneRules,
    final_corpus: str,
) -> tuple[int | None, Decision]:
    """The deployment K from a sweep (module doc), and per corpus the best K, by the study's best-K
    rule (analysis/best_k.py: choose_smallest, each comparison's band over the sessions both K ran in)."""
    scored = []
    for k in sorted(ks):
        repeats, sessions = score_repeats(medians, LeverConfig.uniform(lever, k, corpora), final_corpus)
        if repeats:
            scored.append((k, repeats, sessions))
    decision = Decision("best_k", f"{lever} K in {sorted(ks)}", "", SKIP, "")
    if not scored:
        decision.reason = "no valid measurement of the sweep"
        return None, decision
    band = k_bands(drift, {k: sessions for k, _, sessions in scored})
    chosen, top_k = choose_smallest([(k, r) for k, r, _ in scored], band)
    values = {k: geometric_mean(v for _, _, v in r) for k, r, _ in scored}
    by_k = {k: r for k, r, _ in scored}
    tie = judge(by_k[top_k], by_k[chosen], band(chosen, top_k))  # the comparison that decided, at its lag
    band_text = band_words(band(chosen, top_k), tie)
    decision.decision = CHOSE
    decision.candidate_tok_per_s = values[chosen]
    decision.band = tie.band
    decision.reason = (
        f"K={chosen}: " + ", ".join(f"K={k} {v:,.1f}" for k, v in values.items()) + f" tok/s; {band_text}"
        + (f"; K={top_k} is no real gain over it, the smaller K wins" if top_k != chosen else "")
    )  # fmt: skip
    for corpus in corpora:
        rows = [(k, _row(medians, LeverConfig.uniform(lever, k, corpora), corpus)) for k in sorted(ks)]
        found = [(k, row) for k, row in rows if row is not None]
        if found:
            per_k = k_bands(drift, {k: row["sessions"] for k, row in found})
            decision.per_corpus[corpus] = choose_smallest([(k, row["repeats"]) for k, row in found], per_k)[0]
    return chosen, decision

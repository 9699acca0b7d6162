"""The tuning procedure's decisions, from measured figures alone. Pure: no runs, no I/O.

Each stage proposes one change to the incumbent configuration (one variable at
a time) and keeps it only when the evidence says so:

  score(config) = median tok/s on `final_corpus` when it was measured, else
                  the geometric mean over the corpora of each corpus's median
                  (each corpus at the config's K for that corpus)
  gain          = score(candidate) / score(incumbent) - 1
  band          = analysis.drift.drift_band over the sessions both ran in
                  (rules.unknown_drift_band when a session has no anchor runs)
  keep          iff gain > max(band, rules.min_gain)
                  and no equivalence verdict of the candidate is 'fail'
                  (for rules.must_pass_levers, such as w4a4: every verdict is 'pass')
                  and, for MoE models, no corpus regresses beyond the band

The K sweep first chooses a K: the K with the best score wins, except that a
smaller K whose score is within the band of the best is preferred. The chosen
K is then a change like any other, kept only when it beats the incumbent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.drift import drift_band
from analysis.stats import geometric_mean

KEEP, REJECT, SKIP, CHOSE = "keep", "reject", "skip", "chose"


@dataclass
class TuneRules:
    """The procedure's rules as configuration (conf/tune/tune.yaml `rules`)."""

    # A change must gain more than this as well as more than the drift band.
    min_gain: float = 0.0
    # Band used when a session involved has no anchor runs (drift unknown).
    unknown_drift_band: float = 0.05
    # Levers whose output-equivalence verdict failed are never kept.
    require_equivalence: bool = True
    # Levers that change outputs on purpose need a 'pass' on every corpus, not
    # merely no 'fail': a missing logprob probe (no_reference) does not clear them.
    must_pass_levers: list[str] = field(default_factory=lambda: ["w4a4"])
    # MoE models: a change that slows any corpus beyond drift is rejected.
    moe_regression_check: bool = True


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


def _row(medians: pd.DataFrame, config: LeverConfig, corpus: str) -> pd.Series | None:
    rows = medians[
        (medians["corpus"] == corpus)
        & (medians["lever"] == config.lever)
        & (medians["k"] == config.k(corpus))
    ]
    return rows.iloc[0] if len(rows) else None


def score(medians: pd.DataFrame, config: LeverConfig, final_corpus: str) -> tuple[float, set[str]]:
    """score(config) (module doc) and the sessions its figures come from; NaN when a corpus is missing."""
    corpora = (
        [final_corpus] if final_corpus in dict(config.k_by_corpus) else [c for c, _ in config.k_by_corpus]
    )
    rows = [_row(medians, config, c) for c in corpora]
    if any(r is None for r in rows):
        return math.nan, set()
    sessions = {s for r in rows for s in r["sessions"]}
    values = [float(r["median"]) for r in rows]
    return (values[0] if len(values) == 1 else geometric_mean(values)), sessions


def band_for(drift: pd.DataFrame, sessions: set[str], rules: TuneRules) -> tuple[float, str]:
    band = drift_band(drift, sessions) if sessions and not drift.empty else math.nan
    if math.isnan(band):
        return rules.unknown_drift_band, f"drift unknown, band taken as {rules.unknown_drift_band:.1%}"
    return band, f"drift band {band:.1%}"


def failed_gates(verdicts: pd.DataFrame, config: LeverConfig, must_pass: bool = False) -> list[str]:
    """Corpora where the candidate's latest equivalence verdict is 'fail', with the reason.

    With must_pass, any verdict but 'pass' (or none at all) counts as failed.
    """
    failed = []
    for corpus, k in config.k_by_corpus:
        rows = pd.DataFrame() if verdicts is None or verdicts.empty else verdicts[
            (verdicts["lever"] == config.lever) & (verdicts["k"] == k) & (verdicts["corpus"] == corpus)
        ]  # fmt: skip
        latest = rows.iloc[-1] if len(rows) else None
        if latest is not None and latest["verdict"] == "fail":
            failed.append(f"{corpus}: {latest['reason']}")
        elif must_pass and latest is None:
            failed.append(f"{corpus}: no verdict, and {config.lever} must pass the gate")
        elif must_pass and latest["verdict"] != "pass":
            failed.append(f"{corpus}: {latest['verdict']}, and {config.lever} must pass ({latest['reason']})")
    return failed


def gate_words(verdicts: pd.DataFrame, config: LeverConfig) -> str:
    """The candidate's latest verdict per corpus, e.g. 'code_complete pass, chat_bench fail'."""
    if verdicts is None or verdicts.empty:
        return "no verdict"
    words = []
    for corpus, k in config.k_by_corpus:
        rows = verdicts[
            (verdicts["lever"] == config.lever) & (verdicts["k"] == k) & (verdicts["corpus"] == corpus)
        ]
        if len(rows):
            words.append(f"{corpus} {rows.iloc[-1]['verdict']}")
    return ", ".join(words) or "no verdict"


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
) -> Decision:
    """Keep `candidate` over `incumbent` or not (module doc), with the figures that decided it."""
    new, new_sessions = score(medians, candidate, final_corpus)
    old, old_sessions = score(medians, incumbent, final_corpus)
    decision = Decision(stage, candidate.label, incumbent.label, REJECT, "", new, old)
    decision.gate = gate_words(verdicts, candidate)
    if math.isnan(new) or math.isnan(old):
        decision.reason = "no valid measurement of " + (
            candidate.label if math.isnan(new) else incumbent.label
        )
        return decision
    band, band_text = band_for(drift, new_sessions | old_sessions, rules)
    decision.gain, decision.band = new / old - 1, band
    for corpus, _ in candidate.k_by_corpus:
        a, b = _row(medians, candidate, corpus), _row(medians, incumbent, corpus)
        if a is not None and b is not None:
            decision.per_corpus[corpus] = float(a["median"]) / float(b["median"]) - 1
    threshold = max(band, rules.min_gain)
    must_pass = candidate.lever in rules.must_pass_levers
    if rules.require_equivalence and (failed := failed_gates(verdicts, candidate, must_pass)):
        decision.reason = "output-equivalence gate failed (" + "; ".join(failed) + ")"
        return decision
    if moe and rules.moe_regression_check:
        slower = [c for c, g in decision.per_corpus.items() if g < -band]
        if slower:
            decision.reason = f"MoE model regresses beyond drift on {', '.join(slower)}"
            return decision
    if decision.gain > threshold:
        decision.decision = KEEP
        decision.reason = f"{decision.gain:+.1%} beyond {band_text}"
    elif decision.gain < -band:
        decision.reason = f"{decision.gain:+.1%}: slower, beyond {band_text}"
    else:
        decision.reason = f"{decision.gain:+.1%} within {band_text}: not evidence of a gain"
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
    """The deployment K from a sweep (module doc), and per corpus the best K by the same tie rule."""
    scored = []
    for k in sorted(ks):
        value, sessions = score(medians, LeverConfig.uniform(lever, k, corpora), final_corpus)
        if not math.isnan(value):
            scored.append((k, value, sessions))
    decision = Decision("best_k", f"{lever} K in {sorted(ks)}", "", SKIP, "")
    if not scored:
        decision.reason = "no valid measurement of the sweep"
        return None, decision
    best_value = max(v for _, v, _ in scored)
    band, band_text = band_for(drift, {s for _, _, ss in scored for s in ss}, rules)
    chosen = next(k for k, v, _ in scored if v >= best_value * (1 - band))
    decision.decision = CHOSE
    decision.candidate_tok_per_s = next(v for k, v, _ in scored if k == chosen)
    decision.band = band
    top_k = next(k for k, v, _ in scored if v == best_value)
    decision.reason = (
        f"K={chosen}: " + ", ".join(f"K={k} {v:,.1f}" for k, v, _ in scored) + f" tok/s; {band_text}"
        + (f"; K={top_k} is within the band, the smaller K wins" if top_k != chosen else "")
    )  # fmt: skip
    for corpus in corpora:
        per = [(k, _row(medians, LeverConfig.uniform(lever, k, corpora), corpus)) for k in sorted(ks)]
        per = [(k, float(r["median"])) for k, r in per if r is not None]
        if per:
            top = max(v for _, v in per)
            decision.per_corpus[corpus] = next(k for k, v in per if v >= top * (1 - band))
    return chosen, decision

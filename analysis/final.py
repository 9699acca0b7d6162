"""The final lever per model, its speedup over plain vLLM, and Table 1. Pure.

Input: lever medians (with their per-repeat values) reduced to each swept
lever's best K (analysis.best_k.at_best_k).

Score of a lever for a model, per repeat (session_id, repeat):
  - on the `mix` corpus (the fixed-seed shuffle of all corpora: the study's
    stand-in for "my traffic"): its tok/s there;
  - fallback when the model has no `mix` cells: the geometric mean of its
    tok/s over the corpora that every lever of that model ran (so all levers
    are scored on the same corpora), K at each corpus's best K, per repeat
    key present on every corpus (analysis.decision.geomean_repeats).
  score (tok/s columns) = the geometric mean of the per-repeat scores.

Final lever: the tuning procedure's walk (experiments/tune.py), with the one
rule of analysis.decision: the incumbent starts as van; each lever in stage
order (PROCEDURE: van, suffix, bestkpad, w4a4, dynk, then any other by name) replaces it
only when judge(lever, incumbent) is a 'real gain' (its interval wholly above
1 + drift band). speedup_vs_van = the judgement's ratio of final over van, shown
with its interval, n repeats and label (Table 1). Only levers that cleared the
output-equivalence gate for the model on every corpus they are scored on take
part (analysis/gate.py). Over models: geometric mean of speedup_vs_van.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import pandas as pd

from analysis.compare import compare, typed_flags
from analysis.decision import CONFIDENCE, NO_BAND, NOT_JUDGED, geomean_repeats, judge
from analysis.detectable import MAX_REPEATS, TARGET_POWER, repeats_for
from analysis.drift import band_by_lag
from analysis.gate import gate_problems, latest_verdicts, parse_k_by_corpus
from analysis.medians import sessions_of
from analysis.power import GAIN, SIGMA_LEVER, SIGMA_VAN
from analysis.stats import geometric_mean
from vocab.cells import REFERENCE_LEVER

FINAL_CORPUS = "mix"
# The tuning procedure's stages in order, each with the lever it proposes: experiments/tune.py runs
# them, `walk` replays them over a study's scores. best_k sweeps the K of the drafting lever the
# procedure has reached and confirm measures the final one again: neither proposes a lever of its own.
PROCEDURE: tuple[tuple[str, str | None], ...] = (
    ("van", "van"),
    ("suffix", "suffix"),
    ("kpad", "bestkpad"),
    ("best_k", None),
    ("w4a4", "w4a4"),
    ("dynk", "dynk"),
    ("confirm", None),
)
STAGE_LEVER = {stage: lever for stage, lever in PROCEDURE if lever is not None}
# The walk's order of levers (then any other by name).
STAGE_ORDER = tuple(STAGE_LEVER.values())
# Table 1: the held-out confirmation's figure first (the one to deploy on: analysis/confirmation.py),
# with what it could detect; then the tok/s the choice was scored on and what they are (scored_on:
# the mix corpus, or a geometric mean over corpora that no single cell measured); the selection's
# figure last (the choice was made on it, so it reads high: the winner's curse).
TABLE1_COLUMNS = [
    "model",
    "final_lever",
    "deploy",
    "confirmed_x",
    "confirmed_ci_lo",
    "confirmed_ci_hi",
    "confirmed_n",
    "confirmed_label",
    "confirmed_noise_terms",
    "confirmation",
    "confirmed_power",
    # The confirmation's / the selection's INVALID cells of the two configurations, left out of the
    # figure (analysis/repeats.py invalid_flag; filled by analysis/confirmation.py and analysis/study.py).
    "confirmed_invalid_left_out",
    "van_tok_per_s",
    "final_tok_per_s",
    "scored_on",
    "speedup_vs_van",
    "ci_lo",
    "ci_hi",
    "n_value",
    "n_reference",
    "label",
    "verdict",
    "noise_terms",
    "invalid_left_out",
    # What else the scored cells' engines differed in from van's, and what van's ran with
    # (analysis/effective.py; filled by analysis/study.py from the cells).
    "also_differs",
    "van_ran_with",
]


def lever_label(lever: str, k: object) -> str:
    """'bestkpad K=8'; the lever name alone for levers without drafts (K = 0) or a K per corpus."""
    return f"{lever} K={int(k)}" if isinstance(k, numbers.Real) and not pd.isna(k) and k else lever


def k_by_corpus(rows: pd.DataFrame) -> str:
    """'chat:4, code_edit:8': the K each corpus was scored at."""
    return ", ".join(f"{corpus}:{k}" for corpus, k in rows[["corpus", "k"]].itertuples(index=False))


def _geomean(repeats: tuple) -> float:
    return geometric_mean(v for _, _, v in repeats)


def _stage_rank(lever: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(lever) if lever in STAGE_ORDER else len(STAGE_ORDER), lever)


def walk(scores: pd.DataFrame, drift: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.Series:
    """The procedure's walk (module doc) over one model's allowed lever scores: the final row."""
    ordered = sorted(scores.itertuples(index=False), key=lambda r: _stage_rank(r.lever))
    incumbent = ordered[0]
    for row in ordered[1:]:
        band = band_by_lag(drift, set(row.sessions) | set(incumbent.sessions))
        if judge(row.repeats, incumbent.repeats, band, confidence).real_gain:
            incumbent = row
    return pd.Series(incumbent._asdict())


def lever_scores(rows: pd.DataFrame, final_corpus: str = FINAL_CORPUS) -> tuple[pd.DataFrame, str]:
    """One score per lever of one model's rows (module doc), and the basis in words."""
    if final_corpus in set(rows["corpus"]):
        on = rows[rows["corpus"] == final_corpus]
        scores = on.assign(
            score=[_geomean(r) for r in on["repeats"]], k_by_corpus=on["corpus"] + ":" + on["k"].astype(str)
        )
        return scores.reset_index(drop=True), f"{final_corpus} corpus"
    levers = rows.groupby("lever")["corpus"].agg(set)
    common = sorted(set.intersection(*levers)) if len(levers) else []
    on = rows[rows["corpus"].isin(common)]
    out = []
    for lever, group in on.groupby("lever", sort=True):
        ks = sorted(set(group["k"]))
        repeats = geomean_repeats(list(group["repeats"]))
        out.append(
            {
                "lever": lever,
                "k": ks[0] if len(ks) == 1 else math.nan,
                "k_by_corpus": k_by_corpus(group),
                "score": _geomean(repeats),
                "median": math.nan,
                "mad": math.nan,
                "n": len(repeats),
                "sessions": tuple(sorted(sessions_of(group))),
                "repeats": repeats,
            }
        )
    basis = f"no {final_corpus} corpus: geometric mean over {len(common)} corpora ({', '.join(common)})"
    return pd.DataFrame(out), basis


def _runner_up(allowed: pd.DataFrame, van: pd.DataFrame, drift: pd.DataFrame, confidence: float) -> str:
    """'; no lever is a real gain over van (best other: suffix K=8, within noise: ...)'."""
    others = allowed[allowed["lever"] != REFERENCE_LEVER]
    if others.empty or van.empty:
        return "; no other lever measured"
    best = others.loc[others["score"].idxmax()]
    band = band_by_lag(drift, set(best["sessions"]) | set(van["sessions"].iloc[0]))
    words = judge(best["repeats"], van["repeats"].iloc[0], band, confidence).words()
    label = lever_label(best["lever"], best["k"])
    return f"; no lever is a real gain over van (best other: {label}, {words})"


def final_for_model(
    model: str,
    rows: pd.DataFrame,
    drift: pd.DataFrame,
    final_corpus: str,
    verdicts: pd.DataFrame,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """The final lever of one model with its score, van's score and the comparison columns."""
    scores, basis = lever_scores(rows, final_corpus)
    if scores.empty:
        return {"model": model, "basis": basis, "verdict": "no lever measured"}
    # Every corpus the lever is scored on, at the K it ran there (analysis/gate.py).
    banned = pd.Series(
        [
            bool(gate_problems(verdicts, model, r.lever, parse_k_by_corpus(r.k_by_corpus)))
            for r in scores.itertuples()
        ],
        index=scores.index,
    )
    allowed = scores[~banned]
    van = scores[scores["lever"] == REFERENCE_LEVER]
    if allowed.empty:
        return {"model": model, "basis": basis, "verdict": "no lever cleared the equivalence gate"}
    final = walk(allowed, drift, confidence)
    van_score = float(van["score"].iloc[0]) if len(van) else math.nan
    sides = pd.DataFrame([final, van.iloc[0]]) if len(van) else pd.DataFrame([final])
    van_repeats = van["repeats"].iloc[0] if len(van) else ()
    result = compare(final["repeats"], van_repeats, band_by_lag(drift, sessions_of(sides)), confidence)
    speedup = result["rel_diff"] + 1.0 if len(van) else math.nan
    label = lever_label(final["lever"], final["k"])
    return {
        "model": model,
        "basis": basis,
        "final_lever": final["lever"],
        "final_k": final["k"],
        "final_label": label,
        "final_k_by_corpus": final["k_by_corpus"],
        "final_tok_per_s": float(final["score"]),
        "van_tok_per_s": van_score,
        "speedup_vs_van": speedup,
        "excluded_by_equivalence": ", ".join(lever_label(r.lever, r.k) for r in scores[banned].itertuples()),
        **result,
        "answer": f"{model}: {label}, {speedup:.2f}x over van ({result['verdict']}; {basis})"
        + (_runner_up(allowed, van, drift, confidence) if final["lever"] == REFERENCE_LEVER else "")
        + what_would_judge(result["label"], result["drift_band_rel"]),
    }


# The smallest repeats at which analysis/decision.py's rule meets both targets under the default
# noise model (`python -m analysis.power`; tests/unit/analysis/test_power.py holds it).
REPEATS_FOR_TARGETS = 5
# A comparison with one repeat has no spread of its own: the advice assumes the default noise model's
# (analysis.power: van 1 %, lever 5 % per run), paired: sd of a log difference sqrt(1 % ^ 2 + 5 % ^ 2).
DEFAULT_PAIR_SD = math.hypot(SIGMA_VAN, SIGMA_LEVER)


def what_would_judge(label: str, band: float = math.nan, sd: float = DEFAULT_PAIR_SD) -> str:
    """For a comparison the rule could not judge: what would let it. The repeats come from the band
    the session measured (analysis/detectable.py), not from the default noise model's drift."""
    if label == NOT_JUDGED:
        if math.isnan(band):
            return (
                f"; to judge it, rerun with grid.repeats>={REPEATS_FOR_TARGETS} and the drift anchor on "
                "(grid.anchor.enabled=true): the band is unknown, so the repeats it needs are too"
            )
        n = repeats_for(GAIN, sd, band)
        need = (
            f"grid.repeats={n}"
            if n is not None
            else f"more than {MAX_REPEATS} repeats (no number of them"
            f" finds +{GAIN:.0%} while the band is {band:.1%}: shrink the band first)"
        )
        return (
            f"; to judge it, rerun with {need}: at this session's drift band {band:.1%} and a per-pair sd "
            f"of {sd:.1%} (the default noise model's: one repeat has no spread of its own) a real "
            f"+{GAIN:.0%} is then found {TARGET_POWER:.0%} of the time (analysis/detectable.py; "
            "`python -m analysis.power --store ...` gives it at your machine's measured spread)"
        )
    if label == NO_BAND:
        return "; to judge it, run with the drift anchor on (grid.anchor.enabled=true) so the band is known"
    return ""


def final_levers(
    per_lever: pd.DataFrame,
    drift: pd.DataFrame,
    final_corpus: str = FINAL_CORPUS,
    equivalence: pd.DataFrame | None = None,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """One row per model: final lever, K, tok/s, van tok/s, speedup_vs_van and the verdict (module doc)."""
    verdicts = latest_verdicts(equivalence)
    rows = [
        final_for_model(model, group, drift, final_corpus, verdicts, confidence)
        for model, group in per_lever.groupby("model", sort=True)
    ]
    return typed_flags(pd.DataFrame(rows))


def speedup_geomean(final: pd.DataFrame) -> float:
    """Geometric mean of speedup_vs_van over the models that have one (NaN when none)."""
    if final.empty or "speedup_vs_van" not in final:
        return math.nan
    return geometric_mean(final["speedup_vs_van"].dropna())


def deploy_words(row: dict[str, Any]) -> str:
    """What a deployment takes from this row: the final lever only once its held-out confirmation
    confirmed it, else van (and why)."""
    lever = row.get("final_lever")
    if not isinstance(lever, str):
        return "-"
    if row.get("lever_name") == REFERENCE_LEVER:
        return "van"
    if row.get("confirmation") == "confirmed":
        return lever
    if row.get("confirmation") == "not confirmed":
        return f"van ({lever} not confirmed)"
    return f"van until {lever} is confirmed"


def table1(final: pd.DataFrame, confirmation: pd.DataFrame | None = None) -> pd.DataFrame:
    """Table 1 of the study (TABLE1_COLUMNS): the held-out confirmation's figure of each model's final
    lever and what it could detect (analysis/confirmation.py) where there is one, then the selection's."""
    if final.empty:
        return pd.DataFrame(columns=TABLE1_COLUMNS)
    table = final.rename(
        columns={"final_lever": "lever_name", "final_label": "final_lever", "basis": "scored_on"}
    )
    if confirmation is not None and not confirmation.empty:
        table = table.merge(confirmation, on="model", how="left")
    table["deploy"] = [deploy_words(r) for r in table.to_dict("records")]
    return table.reindex(columns=TABLE1_COLUMNS).reset_index(drop=True)


def geomean_words(table: pd.DataFrame) -> str:
    """One line on the figure over models: the geometric mean of the held-out figures (never the
    selection's, which read high), with how many models it covers; a point figure, never judged."""
    held = table.dropna(subset=["confirmed_x"]) if "confirmed_x" in table else table.iloc[0:0]
    chose = table[table["final_lever"].notna()] if "final_lever" in table else table
    if held.empty:
        return (
            f"Over models: no held-out figure yet ({len(chose)} models with a final lever); the selection's "
            "figures read high and are not summarised: `python -m grid confirm` measures the figures to "
            "deploy on."
        )
    mean = geometric_mean(held["confirmed_x"])
    return (
        f"Over models: geometric mean of the held-out x over van {mean:.3f}x, n={len(held)} of {len(chose)} "
        "models (a point figure with no interval: not judged; each model's interval and label are in "
        "Table 1)."
    )

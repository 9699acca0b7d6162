"""The final lever per model, its speedup over plain vLLM, and Table 1. Pure.

Input: lever medians reduced to each swept lever's best K (analysis.best_k.at_best_k).

Score of a lever for a model:
  - on the `mix` corpus (the fixed-seed shuffle of all corpora: the study's
    stand-in for "my traffic"): its median tok/s there;
  - fallback when the model has no `mix` cells: the geometric mean of its
    medians over the corpora that every lever of that model ran (so all levers
    are scored on the same corpora), K at each corpus's best K.
Final lever = the highest score; speedup_vs_van = final score / van score (in the
fallback this equals the geometric mean over corpora of the per-corpus ratios).
A lever whose output-equivalence verdict is 'fail' on any corpus (latest verdict
per corpus) cannot be final, nor can a lever that changes outputs on purpose
(W4A4) without a 'pass'. Over models: geometric mean of speedup_vs_van.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import pandas as pd

from analysis.compare import compare, typed_flags
from analysis.drift import drift_band
from analysis.medians import sessions_of
from analysis.stats import geometric_mean

FINAL_CORPUS = "mix"
REFERENCE_LEVER = "van"
TABLE1_COLUMNS = [
    "model",
    "van_tok_per_s",
    "final_tok_per_s",
    "final_lever",
    "speedup_vs_van",
    "beyond_drift",
    "beyond_repeats",
    "verdict",
]


def lever_label(lever: str, k: object) -> str:
    """'bestkpad K=8'; the lever name alone for levers without drafts (K = 0) or a K per corpus."""
    return f"{lever} K={int(k)}" if isinstance(k, numbers.Real) and not pd.isna(k) and k else lever


def failed_equivalence(equivalence: pd.DataFrame | None) -> set[tuple[str, str, int]]:
    """(model, lever, k) whose latest verdict (by session id) on some corpus is 'fail'.

    For levers that change outputs on purpose (`changes_outputs`), anything but
    'pass' counts: no logprob probe is no evidence that the outputs are fine.
    """
    if equivalence is None or equivalence.empty:
        return set()
    latest = equivalence.sort_values("session_id").groupby(["model", "corpus", "lever", "k"]).tail(1)
    lossy = latest.get("changes_outputs", pd.Series(False, index=latest.index)).fillna(False).astype(bool)
    failed = latest[(latest["verdict"] == "fail") | (lossy & (latest["verdict"] != "pass"))]
    return {(m, lv, int(k)) for m, lv, k in failed[["model", "lever", "k"]].itertuples(index=False)}


def k_by_corpus(rows: pd.DataFrame) -> str:
    """'chat:4, code_edit:8': the K each corpus was scored at."""
    return ", ".join(f"{corpus}:{k}" for corpus, k in rows[["corpus", "k"]].itertuples(index=False))


def lever_scores(rows: pd.DataFrame, final_corpus: str = FINAL_CORPUS) -> tuple[pd.DataFrame, str]:
    """One score per lever of one model's rows (module doc), and the basis in words."""
    if final_corpus in set(rows["corpus"]):
        on = rows[rows["corpus"] == final_corpus]
        scores = on.assign(score=on["median"], k_by_corpus=on["corpus"] + ":" + on["k"].astype(str))
        return scores.reset_index(drop=True), f"{final_corpus} corpus"
    levers = rows.groupby("lever")["corpus"].agg(set)
    common = sorted(set.intersection(*levers)) if len(levers) else []
    on = rows[rows["corpus"].isin(common)]
    out = []
    for lever, group in on.groupby("lever", sort=True):
        ks = sorted(set(group["k"]))
        out.append(
            {
                "lever": lever,
                "k": ks[0] if len(ks) == 1 else math.nan,
                "k_by_corpus": k_by_corpus(group),
                "score": geometric_mean(group["median"]),
                "median": math.nan,
                "mad": math.nan,
                "n": 0,
                "sessions": tuple(sorted(sessions_of(group))),
            }
        )
    basis = f"no {final_corpus} corpus: geometric mean over {len(common)} corpora ({', '.join(common)})"
    return pd.DataFrame(out), basis


def final_for_model(
    model: str, rows: pd.DataFrame, drift: pd.DataFrame, final_corpus: str, failed: set[tuple[str, str, int]]
) -> dict[str, Any]:
    """The final lever of one model with its score, van's score and the comparison columns."""
    scores, basis = lever_scores(rows, final_corpus)
    if scores.empty:
        return {"model": model, "basis": basis, "verdict": "no lever measured"}
    banned = pd.Series([(model, r.lever, r.k) in failed for r in scores.itertuples()], index=scores.index)
    allowed = scores[~banned]
    van = scores[scores["lever"] == REFERENCE_LEVER]
    if allowed.empty:
        return {"model": model, "basis": basis, "verdict": "every lever failed equivalence"}
    final = allowed.loc[allowed["score"].idxmax()]
    van_score = float(van["score"].iloc[0]) if len(van) else math.nan
    sides = pd.DataFrame([final, van.iloc[0]]) if len(van) else pd.DataFrame([final])
    by_mad = len(van) and not math.isnan(final["mad"])
    result = compare(
        float(final["score"]),
        van_score,
        drift_band(drift, sessions_of(sides)),
        (float(final["mad"]), float(van["mad"].iloc[0])) if by_mad else None,
        (int(final["n"]), int(van["n"].iloc[0])) if by_mad else (0, 0),
    )
    speedup = float(final["score"]) / van_score if van_score > 0 else math.nan
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
        "answer": f"{model}: {label}, {speedup:.2f}x over van ({result['verdict']}; {basis})",
    }


def final_levers(
    per_lever: pd.DataFrame,
    drift: pd.DataFrame,
    final_corpus: str = FINAL_CORPUS,
    equivalence: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per model: final lever, K, tok/s, van tok/s, speedup_vs_van and the verdict (module doc)."""
    failed = failed_equivalence(equivalence)
    rows = [
        final_for_model(model, group, drift, final_corpus, failed)
        for model, group in per_lever.groupby("model", sort=True)
    ]
    return typed_flags(pd.DataFrame(rows))


def speedup_geomean(final: pd.DataFrame) -> float:
    """Geometric mean of speedup_vs_van over the models that have one (NaN when none)."""
    if final.empty or "speedup_vs_van" not in final:
        return math.nan
    return geometric_mean(final["speedup_vs_van"].dropna())


def table1(final: pd.DataFrame) -> pd.DataFrame:
    """Table 1 of the study: model, van tok/s, final tok/s, final lever, x over van, verdicts."""
    if final.empty:
        return pd.DataFrame(columns=TABLE1_COLUMNS)
    table = final.rename(columns={"final_lever": "lever_name", "final_label": "final_lever"})
    return table.reindex(columns=TABLE1_COLUMNS).reset_index(drop=True)

"""Each model's held-out confirmation: the figure to deploy on, beside the selection's. Pure.

Table 1's "x over van" is the figure the final lever was selected on: when
several noisy levers compete, the one that reads best reads high (the winner's
curse; experiments/procedure_power.py measures it). `python -m grid confirm`
(grid/orchestrate/confirm.py; `grid.confirm.enabled` runs it at the end of `grid run`)
measures each model's final configuration and van again, in a fresh session,
on fresh engines, with a prompt seed the selection never used, on the corpora
the selection scored it on. This module judges those cells alone, by the same
rule (analysis.decision.judge through analysis.final.lever_scores), so the
figure carries none of the selection: "confirmed" only when its interval lies
wholly above 1 + the confirmation session's drift band.

A confirmation is of one configuration: when the study now selects another
(more cells measured since), it is stale and says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.decision import judge
from analysis.detectable import TARGET_POWER, detectable_gain, power, spread_of
from analysis.drift import band_by_lag
from analysis.final import FINAL_CORPUS, lever_scores
from analysis.medians import sessions_of
from analysis.power import GAIN
from analysis.repeats import invalid_count, invalid_flag
from vocab.cells import REFERENCE_LEVER

CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"
CONFIRM_COLUMNS = ["model", "confirmed_of", "confirmed_x", "confirmed_ci_lo", "confirmed_ci_hi",
                   "confirmed_n", "confirmed_label", "confirmed_noise_terms", "confirmation",
                   "confirmed_power", "confirmed_prompts_seen", "confirmed_invalid_left_out"]  # fmt: skip


def planned_label(final_row: Mapping[str, Any]) -> str:
    """What a confirmation of this final row measures: 'bestkpad K=8 (mix:8)'."""
    return f"{final_row['final_label']} ({final_row['final_k_by_corpus']})"


def judge_confirmation(rows: pd.DataFrame, drift: pd.DataFrame, final_corpus: str = FINAL_CORPUS) -> dict:
    """The confirmation's columns from its own cells' medians (one model: the final lever and van)."""
    if rows.empty:
        return {"confirmation": "not measured yet: rerun the same `python -m grid confirm` to resume"}
    scores, _ = lever_scores(rows, final_corpus)
    van = scores[scores["lever"] == REFERENCE_LEVER]
    lever = scores[scores["lever"] != REFERENCE_LEVER]
    if van.empty or lever.empty:
        missing = "van" if van.empty else "the final lever"
        return {"confirmation": f"incomplete: no valid {missing} cells yet (rerun `python -m grid confirm`)"}
    final, reference = lever.iloc[0], van.iloc[0]
    band = band_by_lag(drift, sessions_of(pd.DataFrame([final, reference])))
    j = judge(final["repeats"], reference["repeats"], band)
    return {
        "confirmed_x": j.ratio,
        "confirmed_ci_lo": j.lo,
        "confirmed_ci_hi": j.hi,
        "confirmed_n": min(j.n_value, j.n_reference),
        "confirmed_label": j.label,
        "confirmed_noise_terms": j.noise_terms,
        "confirmation": CONFIRMED if j.real_gain else NOT_CONFIRMED,
        "confirmed_power": power_words(j.lo, j.hi, min(j.n_value, j.n_reference), j.band),
    }


def power_words(lo: float, hi: float, n: int, band: float, gain: float = GAIN) -> str:
    """What the confirmation could detect (analysis/detectable.py), from its own interval's spread, n
    and band: its power at a real +`gain` (the study's target, analysis.power.GAIN: +10 %) and the gain
    it finds 80 % of the time; 'low' when that power is below 80 %. A design figure, not the power
    at the figure shown: a confirmed figure always clears its own bar, so power computed at it says
    nothing. At low power a confirmed figure reads high: among draws of one lever, the ones that ran
    high are the ones that clear the band."""
    if math.isnan(band):
        return "unknown: the drift band is unknown"
    sd = spread_of(lo, hi, n)
    if math.isnan(sd):
        return f"unknown: n={n}, no interval"
    found = detectable_gain(sd, n, band)
    at_gain = power(1.0 + gain, sd, n, band)
    spread = f"n={n}, sd {sd:.1%} per pair, band {band:.1%}"
    if at_gain >= TARGET_POWER:
        return (
            f"{at_gain:.0%} at +{gain:.0%} ({spread}); +{found:.1%} or more is found "
            f"{TARGET_POWER:.0%} of the time"
        )
    return (
        f"low: a real +{gain:.0%} is found {at_gain:.0%} of the time ({spread}); only +{found:.1%} or more "
        f"is found {TARGET_POWER:.0%} of the time, and a figure confirmed at low power reads high"
    )


def confirmations(
    final: pd.DataFrame,
    record: Mapping[str, Any] | None,
    medians: pd.DataFrame,
    drift: pd.DataFrame,
    final_corpus: str = FINAL_CORPUS,
    command: str = "python -m grid confirm",
    seen: Mapping[str, float] | None = None,
    cells: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per model of `final` (analysis.final.final_levers): its confirmation's figure, or why none.

    `record`: grid/orchestrate/confirm.py's record ({"models": [{"model", "planned", ...}]}) or None when no
    confirmation was planned; `medians`: analysis.medians.lever_medians of the record's cells;
    `seen`: prompts_seen of those cells; `cells`: the record's cells, INVALID ones included (the
    medians left those out: confirmed_invalid_left_out says so, analysis/repeats.py invalid_flag).
    """
    planned: dict[str, str] = {m["model"]: m["planned"] for m in (record or {}).get("models", [])}
    rows = []
    for row in final.to_dict("records"):
        model = row["model"]
        out: dict[str, Any] = {"model": model, "confirmed_of": planned.get(model)}
        if not isinstance(row.get("final_lever"), str):
            out["confirmation"] = "no final lever"
        elif row["final_lever"] == REFERENCE_LEVER:
            out["confirmation"] = "van: nothing to confirm"
        elif model not in planned:
            out["confirmation"] = f"not run: {command} (same overrides as the run)"
        elif planned[model] != planned_label(row):
            out["confirmation"] = (
                f"stale: confirms {planned[model]}, the study now selects {planned_label(row)}; "
                f"rerun {command}"
            )
        else:
            mine = medians[medians["model"] == model] if not medians.empty else medians
            out |= judge_confirmation(mine, drift, final_corpus)
            out["confirmed_prompts_seen"] = (seen or {}).get(model)
            out["confirmed_invalid_left_out"] = invalid_left_out(row, cells)
        rows.append(out)
    return pd.DataFrame(rows, columns=CONFIRM_COLUMNS)


def invalid_left_out(final_row: Mapping[str, Any], cells: pd.DataFrame | None) -> str | None:
    """The confirmation's INVALID cells of one model (its final lever's and van's), left out of the
    held-out figure, in the one label's words; None where none was."""
    if cells is None or cells.empty or not {"model", "lever"} <= set(cells.columns):
        return None
    theirs = cells[cells["model"] == final_row["model"]].to_dict("records")
    lever = [c for c in theirs if c["lever"] == final_row["final_lever"]]
    van = [c for c in theirs if c["lever"] == REFERENCE_LEVER]
    label = str(final_row.get("final_label") or final_row["final_lever"])
    return invalid_flag([(label, *invalid_count(lever)), ("van", *invalid_count(van))], left_out=True)


def confirmation_words(row: Mapping[str, Any]) -> str:
    """'confirmed 1.12x [1.05, 1.19]' or the reason there is no figure."""
    x = row.get("confirmed_x")
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return str(row.get("confirmation"))
    return f"{row['confirmation']}: {x:.3f}x [{row['confirmed_ci_lo']:.3f}, {row['confirmed_ci_hi']:.3f}]"


def prompts_seen(confirming: pd.DataFrame, selection: pd.DataFrame) -> dict[str, float]:
    """Per model: the share of the confirmation's measured prompts that the selection's cells measured too.

    A new seed draws a new order; in a corpus not much larger than one draw the two overlap
    (all of it where the grid measures every prompt). Each cell is a fresh engine either way;
    this says how much of the confirmation's prompt sample is the selection's.
    """
    column = "measured_prompt_hashes"
    if confirming.empty or column not in confirming or column not in selection:
        return {}

    def hashes(frame: pd.DataFrame) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for model, text in frame[["model", column]].itertuples(index=False):
            if isinstance(text, str):
                out.setdefault(model, set()).update(json.loads(text))
        return out

    seen = hashes(selection)
    return {model: len(h & seen.get(model, set())) / len(h) for model, h in hashes(confirming).items() if h}

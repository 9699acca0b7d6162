"""The study path's selection figure against its held-out confirmation, simulated through its own code.

`python -m experiments.study_power` (part of `make power`).

A study (experiment=final) measures every lever of a model in one grid, picks the
best K per swept lever (analysis.best_k) and walks the levers with the one rule
(analysis.final): Table 1's "x over van" is the figure the choice was made on.
Then `grid confirm` measures the choice and van again in a fresh session, and
analysis.confirmation judges those cells alone. Here both are the real
functions; only the measurements are drawn, by experiments.procedure_power's
SimulatedTune (its noise model: per-launch lognormal noise, a per-session offset,
a drift between the anchors).

Per scenario (`null`: no lever changes anything, true ratio 1; `+10%`: every
drafting lever is 10 % faster, true ratio 1.10), over the draws where the study
chose a lever other than van: how high the selection's figure reads, how often
its interval holds the true ratio, and the same for the held-out figure (target:
about the interval's nominal 90 %), and how often the held-out figure is
"confirmed" (null: a false confirmation; +10 %: the power).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from rich.console import Console

from analysis.best_k import at_best_k, best_k
from analysis.confirmation import CONFIRMED, judge_confirmation
from analysis.decision import CONFIDENCE
from analysis.final import final_levers
from analysis.gate import parse_k_by_corpus
from analysis.simulated_sessions import NOISES, SEED
from experiments.procedure_power import (
    DRAFTING,
    WORKERS,
    SimulatedTune,
    children,
    pool_map,
    row_seed,
    tune_config,
)
from vocab.schema import ModelSpec

CORPUS = "mix"


def study_levers() -> dict[str, list[int]]:
    """The final experiment's drafting levers with their K sets (the shipped lever files), and van."""
    from experiments.procedure_power import _LEVERS

    return {
        "van": [],
        "suffix": list(_LEVERS.load(object, "suffix").ks),
        "bestkpad": list(_LEVERS.load(object, "bestkpad").ks),
        "dynk": [_LEVERS.load(object, "dynk").ks[0]],
    }


def passing_verdicts(medians: pd.DataFrame) -> pd.DataFrame:
    """Every measured lever passed the equivalence gate (these draws are about speed)."""
    rows = medians[medians["lever"] != "van"][["model", "corpus", "lever", "k"]].assign(
        session_id="sim", verdict="pass", reason="simulated", judged_at="2026-01-01T00:00:00+00:00"
    )
    return rows.reset_index(drop=True)


@dataclass(frozen=True)
class StudyDraw:
    chosen: str  # the study's final lever
    selection_x: float
    selection_lo: float
    selection_hi: float
    held_out_x: float  # NaN when van was chosen (nothing to confirm)
    held_out_lo: float
    held_out_hi: float
    confirmed: bool


def study_once(
    noise: object, effects: Mapping[str, float], repeats: int, rng: np.random.Generator
) -> StudyDraw:
    """One model's study and, when it chose a lever, its held-out confirmation."""
    cfg = tune_config(corpora=(CORPUS,))
    t = SimulatedTune(cfg, ModelSpec(name="sim", path="sim"), "sim", Console(quiet=True), noise=noise,
                      effects=effects, rng=rng, repeats=repeats)  # fmt: skip
    medians, drift, _ = t.evidence(t.stage("study", study_levers()))
    final = final_levers(at_best_k(medians, best_k(medians, drift)), drift, CORPUS, passing_verdicts(medians))
    row = final.iloc[0]
    selection = (row["speedup_vs_van"], row["ci_lo"], row["ci_hi"])
    if row["final_lever"] == "van":
        return StudyDraw("van", *selection, math.nan, math.nan, math.nan, False)
    [(_, k)] = parse_k_by_corpus(row["final_k_by_corpus"])
    held, held_drift, _ = t.evidence(t.stage("confirm", {"van": [], row["final_lever"]: [k] if k else []}))
    c = judge_confirmation(held, held_drift, CORPUS)
    return StudyDraw(row["final_lever"], *selection, c["confirmed_x"], c["confirmed_ci_lo"],
                     c["confirmed_ci_hi"], c["confirmation"] == CONFIRMED)  # fmt: skip


@dataclass(frozen=True)
class StudyRow:
    noise: str
    scenario: str
    truth: float
    chose: float  # share of draws that chose a lever other than van
    selection_mean: float  # mean selection figure, over those draws
    selection_covers: float
    held_out_mean: float
    held_out_covers: float
    confirmed: float  # share of all draws whose held-out figure is 'confirmed'
    draws: int


def _study_task(task: tuple) -> StudyDraw:
    noise, effects, repeats, seed = task
    return study_once(noise, effects, repeats, np.random.default_rng(seed))


def study_row(
    noise: object, name: str, gain: float, repeats: int, draws: int, seed: int = SEED, workers: int = WORKERS
) -> StudyRow:
    """`draws` studies, each from its own child of the row's seed (row_seed: the two H200 rows were the
    same studies, agreeing to the digit), in `workers` processes (the figures do not depend on it)."""
    effects = dict.fromkeys(DRAFTING, gain)
    truth = 1.0 + gain
    seeds = children(row_seed(seed, noise.name, name), draws)  # type: ignore[attr-defined]
    picks = pool_map(_study_task, [(noise, effects, repeats, s) for s in seeds], workers)
    chosen = [d for d in picks if d.chosen != "van"]

    def share(flags: list[bool]) -> float:
        return sum(flags) / len(flags) if flags else math.nan

    return StudyRow(
        noise.name,  # type: ignore[attr-defined]
        name,
        truth,
        len(chosen) / draws,
        float(np.mean([d.selection_x for d in chosen])) if chosen else math.nan,
        share([d.selection_lo <= truth <= d.selection_hi for d in chosen]),
        float(np.mean([d.held_out_x for d in chosen])) if chosen else math.nan,
        share([d.held_out_lo <= truth <= d.held_out_hi for d in chosen]),
        sum(d.confirmed for d in picks) / draws,
        draws,
    )


def study_table(rows: list[StudyRow]) -> str:
    lines = [
        "| noise | scenario | chose a lever | selection figure (mean) | selection CI covers truth "
        "| held-out figure (mean) | held-out CI covers truth | confirmed |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.noise} | {r.scenario} (truth {r.truth:.2f}) | {r.chose:.1%} | {r.selection_mean:.3f}"
            f" | {r.selection_covers:.1%} | {r.held_out_mean:.3f} | {r.held_out_covers:.1%}"
            f" | {r.confirmed:.1%} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=300, help="simulated studies per row")
    parser.add_argument("--repeats", type=int, default=5, help="grid.repeats of the study and confirmation")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.draws < 1 or args.repeats < 2:
        parser.error("--draws >= 1, --repeats >= 2")
    return args


def header(repeats: int, draws: int, seed: int) -> str:
    """The table's first line, which docs/decisions.md quotes (a test holds the two equal)."""
    return (
        f"The study path (analysis.final's choice, then grid confirm judged by analysis.confirmation), "
        f"one model on the mix corpus, {repeats} repeats, {draws:,} simulated studies per row, "
        f"each row its own draws from seed {seed}; nominal interval {CONFIDENCE:.0%}:"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(header(args.repeats, args.draws, args.seed) + "\n")
    rows = [
        study_row(noise, name, gain, args.repeats, args.draws, args.seed)
        for noise in NOISES
        for name, gain in (("null", 0.0), ("+10%", 0.10))
    ]
    print(study_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

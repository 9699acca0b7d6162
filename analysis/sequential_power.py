"""Fixed repeats against repeats only where needed (analysis.sequential), simulated through the real rule.

`python -m analysis.sequential_power` (part of `make power`).

One comparison, suffix vs van on one corpus, drawn from analysis/simulated_sessions.py's
noise model (per-launch lognormal noise, a per-session offset, a drift between each
session's anchors; the one experiments.procedure_power draws whole tunes from). Designs:

  fixed n      one session of n repeats, judged at the rule's 90 % (analysis.decision)
  sequential   looks at cumulative repeats (default 3, 5, 8, 12), each look a session
               of its own (a new `grid run`, as grid/orchestrate/sequential.py runs them), judged by
               analysis.sequential.look at Pocock's corrected confidence over every
               session's repeats so far, the band from all their anchors (analysis.drift);
               stops at the first decided look; "min_gain 5%" also stops once the interval
               rules out a gain of 5 % or more (grid.sequential.min_gain)

Rows: false keep (no effect: kept as a real gain), power (+10 % on suffix: kept),
and the mean repeats per comparison in each scenario, from which the GPU-hours
follow (grid/cli/plan_report.py prints them for a grid).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.decision import judge
from analysis.drift import drift_band
from analysis.sequential import LOOKS, check_looks, look
from analysis.simulated_sessions import NOISES, SEED, ProcedureNoise, SessionCorpora, SimulatedSessions
from vocab.schema import ModelSpec

CORPUS = "code_complete"
GAIN = 0.10
LEVERS = {"van": [], "suffix": [8]}


@dataclass(frozen=True)
class Decision:
    kept: bool
    repeats: int
    sessions: int


def _sides(t: SimulatedSessions, keys: set[str]) -> tuple[tuple, tuple, float]:
    medians, drift, _ = t.evidence(keys)
    by_lever = {row.lever: row for row in medians.itertuples()}
    sessions = set(by_lever["van"].sessions) | set(by_lever["suffix"].sessions)
    return by_lever["suffix"].repeats, by_lever["van"].repeats, drift_band(drift, sessions)


def _tune(noise: ProcedureNoise, effect: float, rng: np.random.Generator) -> SimulatedSessions:
    return SimulatedSessions(SessionCorpora((CORPUS,)), ModelSpec(name="sim", path="sim"), "sim",
                             noise=noise, effects={"suffix": effect}, rng=rng)  # fmt: skip


def fixed(noise: ProcedureNoise, effect: float, n: int, rng: np.random.Generator) -> Decision:
    t = _tune(noise, effect, rng)
    t.repeats = n
    value, reference, band = _sides(t, t.stage("fixed", LEVERS))
    return Decision(judge(value, reference, band).real_gain, n, 1)


def sequential(
    noise: ProcedureNoise,
    effect: float,
    looks: Sequence[int],
    rng: np.random.Generator,
    min_gain: float = 0.0,
) -> Decision:
    t = _tune(noise, effect, rng)
    keys: set[str] = set()
    done = 0
    for sessions, target in enumerate(looks, start=1):
        t.repeats = target - done
        keys |= t.stage(f"look{target}", LEVERS)
        done = target
        step = look(*_sides(t, keys), looks=looks, min_gain=min_gain)
        if step.decided:
            return Decision(step.judgement.real_gain, done, sessions)
    raise AssertionError("the last look is always decided")


@dataclass(frozen=True)
class DesignRow:
    noise: str
    design: str
    false_keep: float
    power: float
    repeats_null: float
    repeats_gain: float
    sessions_gain: float
    draws: int
    sessions_null: float = 1.0


def null_and_gain(
    noise: ProcedureNoise,
    draws: int,
    seed: int,
    n: int | None = None,
    looks: Sequence[int] = LOOKS,
    min_gain: float = 0.0,
    gain: bool = True,
) -> tuple[list[Decision], list[Decision]]:
    """`draws` decisions on a lever that does nothing, then `draws` on one with GAIN (none if not
    `gain`), from one generator seeded `seed`: the null draws are the same with or without the gain's."""
    rng = np.random.default_rng(seed)

    def one(effect: float) -> Decision:
        if n is not None:
            return fixed(noise, effect, n, rng)
        return sequential(noise, effect, looks, rng, min_gain)

    null = [one(0.0) for _ in range(draws)]
    return null, [one(GAIN) for _ in range(draws)] if gain else []


def false_keep(noise: ProcedureNoise, draws: int, seed: int, **design: Any) -> float:
    """design_row's false_keep alone (its null draws, without the gain's): how often a lever that
    does nothing is kept."""
    null, _ = null_and_gain(noise, draws, seed, gain=False, **design)
    return sum(d.kept for d in null) / draws


def design_row(
    noise: ProcedureNoise,
    design: str,
    draws: int,
    seed: int,
    n: int | None = None,
    looks: Sequence[int] = LOOKS,
    min_gain: float = 0.0,
) -> DesignRow:
    null, gain = null_and_gain(noise, draws, seed, n, looks, min_gain)
    return DesignRow(
        noise.name,
        design,
        sum(d.kept for d in null) / draws,
        sum(d.kept for d in gain) / draws,
        float(np.mean([d.repeats for d in null])),
        float(np.mean([d.repeats for d in gain])),
        float(np.mean([d.sessions for d in gain])),
        draws,
        float(np.mean([d.sessions for d in null])),
    )


def expected_repeats_and_sessions(
    noise: ProcedureNoise,
    looks: Sequence[int] = LOOKS,
    min_gain: float = 0.0,
    draws: int = 200,
    seed: int = SEED,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(mean repeats, mean looks) per comparison under `noise`, with no effect and with +10 %
    (grid/cli/plan_report.py's expected GPU-hours)."""
    row = design_row(noise, "sequential", draws, seed, looks=check_looks(looks), min_gain=min_gain)
    return (row.repeats_null, row.sessions_null), (row.repeats_gain, row.sessions_gain)


def designs_table(rows: Sequence[DesignRow]) -> str:
    lines = [
        "| noise | design | false keep | power at +10% | mean repeats, no effect | mean repeats, +10% "
        "| sessions, +10% |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.noise} | {r.design} | {r.false_keep:.1%} | {r.power:.1%} | {r.repeats_null:.1f}"
            f" | {r.repeats_gain:.1f} | {r.sessions_gain:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="simulated comparisons per scenario and row")
    parser.add_argument(
        "--looks", type=int, nargs="+", default=list(LOOKS), help="cumulative repeats per look"
    )
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    looks = check_looks(args.looks)
    label = f"sequential {','.join(map(str, looks))}"
    rows = []
    for noise in NOISES:
        rows += [design_row(noise, f"fixed {n}", args.draws, args.seed, n=n) for n in (5, looks[-1])]
        rows.append(design_row(noise, label, args.draws, args.seed, looks=looks))
        rows.append(
            design_row(noise, f"{label}, min_gain 5%", args.draws, args.seed, looks=looks, min_gain=0.05)
        )
    print(
        f"One comparison (suffix vs van), {args.draws:,} draws per scenario and row, seed {args.seed}; "
        "sequential: Pocock-corrected looks (analysis/sequential.py), each look a session of its own:\n"
    )
    print(designs_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

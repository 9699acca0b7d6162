"""Error rates of analysis.decision's rule, measured by simulation: `python -m analysis.power`.

Noise model (fitted to the H200 record; lognormal multiplicative noise):

  one session: anchor van run at t = 0, then R repeats interleaved as the grid
  runs them (repeat r: van then lever for even r, lever then van for odd r),
  then the anchor again at t = 1; run j of the 2R measured runs is at
  t = (j + 1) / (2R + 1).
    ln tok/s(run) = ln mu + D * t + e
    D ~ N(0, SIGMA_DRIFT^2)          the session's drift from start to end (2 %)
    e ~ N(0, SIGMA_VAN^2)            for van and the anchor runs (1 % run to run)
    e ~ N(0, SIGMA_LEVER^2)          for the speculative lever (5 % run to run)
    mu = 1 for van, 1 + effect for the lever
  band = analysis.drift's pooled_rel of the session's one anchor pair = |ln(end / start)|.

For each n (repeats per side) and effect (0: no real effect; GAIN: a real 10 %
gain) it draws `draws` sessions and reports how often the lever is kept, i.e.
judged 'real gain' by analysis.decision.judge (paired: the repeats share
session and repeat index), and how often a naive rule keeps it (point ratio
- 1 > band). Targets: false keep <= 5 % with no effect, power >= 80 % at +10 %.

The noise figures are options: `--sigma-van 0.075 --sigma-lever 0.2 --gain 0.24`
gives the rates on a machine whose own repeats spread that much (the H200 tune
of 2026-12-01, docs/benchmarks/2026-12-01-h200-tune.md).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from analysis.decision import CONFIDENCE, judge
from analysis.drift import DRIFT_FACTOR

SIGMA_VAN = 0.01
SIGMA_LEVER = 0.05
SIGMA_DRIFT = 0.02
GAIN = 0.10
MAX_FALSE_KEEP = 0.05
MIN_POWER = 0.80
NS = tuple(range(2, 9))
SEED = 16
DRAWS = 20_000


@dataclass(frozen=True)
class Noise:
    """The noise model's figures (module doc): run-to-run sigmas and drift, and the real gain tested."""

    van: float = SIGMA_VAN
    lever: float = SIGMA_LEVER
    drift: float = SIGMA_DRIFT
    gain: float = GAIN
    # False: no drift anchor in the session (the band is 0, the interval alone decides), as in
    # experiment=gpu_validate, whose anchor is off.
    anchor: bool = True


@dataclass(frozen=True)
class Rates:
    n: int
    false_keep: float  # kept with no real effect
    power: float  # kept with a real GAIN
    naive_false_keep: float  # point estimate beyond the band, no real effect
    naive_power: float
    draws: int

    @property
    def meets(self) -> bool:
        return self.false_keep <= MAX_FALSE_KEEP and self.power >= MIN_POWER


def keep_rates(
    n: int, effect: float, draws: int, rng: np.random.Generator, noise: Noise = Noise()
) -> tuple[float, float]:
    """(share kept by the rule, share kept by the naive rule) over `draws` simulated sessions."""
    times = (np.arange(2 * n) + 1) / (2 * n + 1)
    drift = rng.normal(0.0, noise.drift, draws)
    anchor_start = rng.normal(0.0, noise.van, draws)
    anchor_end = drift + rng.normal(0.0, noise.van, draws)
    bands = DRIFT_FACTOR * np.abs(anchor_end - anchor_start) if noise.anchor else np.zeros(draws)
    # run index of van and lever in repeat r: (2r, 2r + 1) for even r, (2r + 1, 2r) for odd r
    r = np.arange(n)
    van_idx = np.where(r % 2 == 0, 2 * r, 2 * r + 1)
    lever_idx = np.where(r % 2 == 0, 2 * r + 1, 2 * r)
    van = drift[:, None] * times[van_idx] + rng.normal(0.0, noise.van, (draws, n))
    lever = np.log1p(effect) + drift[:, None] * times[lever_idx] + rng.normal(0.0, noise.lever, (draws, n))
    van, lever = np.exp(van), np.exp(lever)
    kept = naive = 0
    for i in range(draws):
        band = float(bands[i])
        x = [("s", j, float(lever[i, j])) for j in range(n)]
        y = [("s", j, float(van[i, j])) for j in range(n)]
        j = judge(x, y, band)
        kept += j.real_gain
        naive += j.ratio - 1.0 > band
    return kept / draws, naive / draws


def simulate(
    ns: tuple[int, ...] = NS, draws: int = DRAWS, seed: int = SEED, noise: Noise = Noise()
) -> list[Rates]:
    """The rates per n (module doc), reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    out = []
    for n in ns:
        false_keep, naive_false = keep_rates(n, 0.0, draws, rng, noise)
        power, naive_power = keep_rates(n, noise.gain, draws, rng, noise)
        out.append(Rates(n, false_keep, power, naive_false, naive_power, draws))
    return out


def smallest_n(rates: list[Rates]) -> int | None:
    """The smallest n that meets both targets (None if none does)."""
    return next((r.n for r in rates if r.meets), None)


def table(rates: list[Rates], seed: int = SEED, noise: Noise = Noise()) -> str:
    lines = [
        f"noise: van {noise.van:.1%}, lever {noise.lever:.1%} run to run, anchor drift {noise.drift:.1%}"
        f" (lognormal); {CONFIDENCE:.0%} paired t-interval on log ratios beyond the drift band"
        + ("" if noise.anchor else " (no anchor: band 0)"),
        f"{rates[0].draws:,} simulated sessions per cell, seed {seed}",
        "",
        f"| n | false keep (no effect) | power (+{noise.gain:.0%}) | naive false keep | naive power"
        " | meets both |",
        "|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rates:
        lines.append(
            f"| {r.n} | {r.false_keep:.1%} | {r.power:.1%} | {r.naive_false_keep:.1%} | {r.naive_power:.1%}"
            f" | {'yes' if r.meets else 'no'} |"
        )
    n = smallest_n(rates)
    lines += [
        "",
        f"targets: false keep <= {MAX_FALSE_KEEP:.0%}, power >= {MIN_POWER:.0%}; "
        + (f"smallest n meeting both: {n}" if n else "no n meets both"),
        "naive: point ratio - 1 > band (no interval)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--sigma-van", type=float, default=SIGMA_VAN, help="van's run-to-run sd (log scale)")
    parser.add_argument("--sigma-lever", type=float, default=SIGMA_LEVER, help="the lever's run-to-run sd")
    parser.add_argument("--sigma-drift", type=float, default=SIGMA_DRIFT, help="drift across a session")
    parser.add_argument("--gain", type=float, default=GAIN, help="the real gain whose power is measured")
    parser.add_argument("--no-anchor", action="store_true", help="sessions without a drift anchor (band 0)")
    parser.add_argument("--max-n", type=int, default=max(NS), help="the largest number of repeats tried")
    args = parser.parse_args(argv)
    figures = (args.sigma_van, args.sigma_lever, args.sigma_drift)
    if min(figures) < 0 or args.gain <= 0 or args.max_n < 2:
        parser.error("sigmas must be >= 0, --gain > 0 (0.1 is +10 %) and --max-n >= 2")
    noise = Noise(args.sigma_van, args.sigma_lever, args.sigma_drift, args.gain, not args.no_anchor)
    ns = tuple(range(2, args.max_n + 1))
    print(table(simulate(ns, args.draws, args.seed, noise), args.seed, noise))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

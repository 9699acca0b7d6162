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

`--store PATH [--model NAME] [--lever suffix-k8]` takes van's and the lever's sigmas from the
store's variance components (analysis/variance.py) instead, and says which figure came from where.
The mapping: a run here is one measured cell whose noise is independent of every other run's, as
in the grid's interleaved repeats, where each repeat of a cell is a launch of its own (van never
shares a launch with a drafting lever: their argv differ). So a run's sigma is the component
analysis.variance calls per-run, sqrt(sd_block^2 + sd_launch^2): block to block inside a launch
plus launch to launch inside a session. The between-session component is left out: van and the
lever are paired within a session, so a session's level cancels in their ratio, and what moves
within a session is the anchor drift, which stays SIGMA_DRIFT (not a variance component). Where
blocks of one launch are the repeats, this reads high (their launch term is shared): the advice
is conservative then. A sigma the store cannot estimate (one launch only, no VALID cells, no
launch ids) keeps its default, said so. Without --lever, the drafting configuration with the
largest measured per-run sd is used (the repeats must suffice for the noisiest lever).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.blocks import config_label
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


def _measured(row: pd.Series) -> str:
    return (
        f"measured: {row['model']} {config_label(row['lever'], row['k'])} per-run sd, "
        f"n={row['n_blocks']} blocks on {row['n_launches']} launches, df {row['df_run']:.0f}"
        f", 90% interval {row['sd_run_lo']:.1%}-{row['sd_run_hi']:.1%} (the repeats go as its square)"
    )


def store_sigmas(
    components: pd.DataFrame, model: str, lever: str | None, fallback: Noise = Noise()
) -> tuple[float, float, list[str]]:
    """(van's sigma, the lever's sigma, one line each saying where it came from) for `model`.

    From analysis.variance's per-run sd (module doc); `fallback`'s (the options', by default
    SIGMA_VAN and SIGMA_LEVER) where the store cannot estimate it. `lever`: a configuration label
    (suffix-k8), or None for the drafting configuration with the largest measured per-run sd.
    """
    rows = components[components["model"] == model]
    labels = [config_label(lv, k) for lv, k in zip(rows["lever"], rows["k"], strict=True)]
    rows = rows.assign(label=labels)
    van_rows = rows[rows["lever"] == "van"]
    van, default_van = fallback.van, f"default {fallback.van:.1%} (--sigma-van)"
    if van_rows.empty:
        van_words = f"{default_van}: no VALID van cells of {model} with a launch id"
    elif math.isnan(van_rows.iloc[0]["sd_run"]):
        van_words = f"{default_van}: not measurable ({van_rows.iloc[0]['notes']})"
    else:
        van = float(van_rows.iloc[0]["sd_run"])
        van_words = f"{van:.1%} {_measured(van_rows.iloc[0])}"
    levers = rows[rows["lever"] != "van"] if lever is None else rows[rows["label"] == lever]
    measured = levers[levers["sd_run"].notna()]
    chosen, default_lever = fallback.lever, f"default {fallback.lever:.1%} (--sigma-lever)"
    if levers.empty:
        which = lever or "other than van"
        lever_words = f"{default_lever}: no VALID cells of {model} {which} with a launch id"
    elif measured.empty:
        lever_words = f"{default_lever}: not measurable ({levers.iloc[0]['notes']})"
    else:
        row = measured.loc[measured["sd_run"].idxmax()]
        chosen = float(row["sd_run"])
        pick = "" if lever is not None else " (the largest of its drafting configurations)"
        lever_words = f"{chosen:.1%} {_measured(row)}{pick}"
    return van, chosen, [f"van sigma: {van_words}", f"lever sigma: {lever_words}"]


def components_from_store(path: str) -> pd.DataFrame:
    """analysis.variance's table of the store at `path` (a URL, or a path relative to the cwd)."""
    from analysis.load import measured_cells
    from analysis.variance import variance_components
    from store.fs import is_url
    from store.read import connect
    from vocab.paths import existing_store

    # A mistyped path is an error (vocab.errors.StoreError), not an empty store with no components.
    root = existing_store(path if is_url(path) else str(Path(path).resolve()), key="--store")
    return variance_components(measured_cells(connect(root)))


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
    parser.add_argument("--store", help="take van's and the lever's sigmas from this store (module doc)")
    parser.add_argument("--model", help="with --store: the model (needed when the store has several)")
    parser.add_argument("--lever", help="with --store: the lever configuration, e.g. suffix-k8")
    args = parser.parse_args(argv)
    figures = (args.sigma_van, args.sigma_lever, args.sigma_drift)
    if min(figures) < 0 or args.gain <= 0 or args.max_n < 2 or args.draws < 1:
        parser.error("sigmas must be >= 0, --gain > 0 (0.1 is +10 %), --max-n >= 2 and --draws >= 1")
    sigma_van, sigma_lever, sources = args.sigma_van, args.sigma_lever, []
    if args.store is not None:
        from vocab.errors import StoreError

        try:
            components = components_from_store(args.store)
        except (StoreError, OSError) as exc:  # OSError: a store that does not answer (StoreUnreachable)
            parser.exit(2, f"error: {' '.join(str(exc).split())}\n")  # one line; store messages are redacted
        models = sorted(set(components["model"]))
        model = args.model or (models[0] if len(models) == 1 else None)
        if model is None:
            why = components.attrs.get("note") if not models else f"it has {', '.join(models)}"
            parser.error(f"--model NAME: which model of {args.store} ({why})")
        fallback = Noise(args.sigma_van, args.sigma_lever)
        sigma_van, sigma_lever, sources = store_sigmas(components, model, args.lever, fallback)
        drift = f"drift sigma: {args.sigma_drift:.1%} (--sigma-drift; the anchors' drift, not a component)"
        sources = [f"noise from {args.store}, model {model}:", *sources, drift, ""]
    noise = Noise(sigma_van, sigma_lever, args.sigma_drift, args.gain, not args.no_anchor)
    ns = tuple(range(2, args.max_n + 1))
    print("\n".join([*sources, table(simulate(ns, args.draws, args.seed, noise), args.seed, noise)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

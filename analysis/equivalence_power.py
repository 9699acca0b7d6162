"""Pass and catch rates of the paired equivalence gate, by simulation: `python -m analysis.equivalence_power`.

The gate (analysis/equivalence.py: judge_paired) is run on simulated prompt
outcomes. Per prompt, each run either reproduces van's greedy output or
changes it. The model:

  a share `fragile_share` of prompts is fragile (bf16 reduction order can flip a
  token somewhere in the output), the rest stable;
  on a fragile prompt, van's replicate changes the output with probability
  `fragile_change`, and so does the lever's own noise, independently;
  the lever also changes each prompt's output with probability `extra_change`
  (a bug in a lossless lever), independently of the noise.

A floor is given by what one can measure: the share of prompts the replicate
changes (differ_share = fragile_share x fragile_change) and the share on which
a lever identical to van is discordant with the replicate (discordant_share =
2 fragile_share fragile_change (1 - fragile_change)); a lever `excess` points
worse has extra_change = excess / (1 - differ_share), so that d (the share it
changes minus the share the replicate changes) is exactly `excess`.

Floors:
  h200_independent  the replicate changes 48% of outputs (bf16, 1,024 tokens,
                    HumanEval on an H200: 86 of 164 matched), every prompt equally
                    fragile: runs independent, ~50% discordant, the noisiest case
  h200_measured     the H200 tune of 2026-12-01: the replicate changed 104 of 160,
                    a lever identical in effect (suffix) was discordant with it on
                    33 of 160 (21%): fragile prompts are fragile in every run
  deterministic     float32 on the CPU: the replicate changes nothing

Targets (tests/unit/analysis/test_equivalence_power.py): a lever identical to
van passes every time on the deterministic floor from min_prompts (25) on, at
least 80% at 160 prompts on the measured H200 floor and at 320 on the
independent one; below min_prompts nothing passes; a lever 10 points worse
(at the margin) is caught (not passed) at least 1 - alpha - 0.01 (94%, the bound
is approximate and the draws finite) at every n, and a lever 5 or 10 points
worse on the deterministic floor at least 95% from 80 prompts on.
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.equivalence import NO_REFERENCE, PASS, judge_paired, paired_from_counts
from vocab.schema import EquivalenceConfig

NS = (20, 40, 80, 160, 320)
EXCESSES = (0.0, 0.05, 0.10)
DRAWS = 40_000
SEED = 26


@dataclass(frozen=True)
class Floor:
    """van's own run-to-run change of greedy outputs (module doc)."""

    name: str
    differ_share: float
    discordant_share: float

    @property
    def fragile_change(self) -> float:
        """P(a run changes a fragile prompt's output), from the measured shares."""
        return 1.0 - self.discordant_share / (2.0 * self.differ_share) if self.differ_share else 0.0

    @property
    def fragile_share(self) -> float:
        return self.differ_share / self.fragile_change if self.fragile_change else 0.0


H200_INDEPENDENT = Floor("h200_independent", 0.48, 2 * 0.48 * 0.52)
H200_MEASURED = Floor("h200_measured", 104 / 160, 33 / 160)
DETERMINISTIC = Floor("deterministic", 0.0, 0.0)
FLOORS = (H200_INDEPENDENT, H200_MEASURED, DETERMINISTIC)


def outcome_probabilities(floor: Floor, excess: float) -> tuple[float, float, float, float]:
    """P(lever only changed), P(replicate only changed), P(both changed), P(neither), per prompt."""
    fragile, change = floor.fragile_share, floor.fragile_change
    extra = excess / (1.0 - floor.differ_share)
    lever_changes_fragile = 1.0 - (1.0 - change) * (1.0 - extra)
    lever_only = (1.0 - fragile) * extra + fragile * (1.0 - change) * lever_changes_fragile
    floor_only = fragile * change * (1.0 - change) * (1.0 - extra)
    both = fragile * change * lever_changes_fragile
    return lever_only, floor_only, both, 1.0 - lever_only - floor_only - both


@dataclass(frozen=True)
class Rates:
    """Shares of simulated gate verdicts."""

    passed: float
    no_reference: float

    @property
    def caught(self) -> float:
        """Not passed: failed or no_reference (neither lets the lever be used, analysis/gate.py)."""
        return 1.0 - self.passed


def simulate(
    floor: Floor,
    excess: float,
    n_prompts: int,
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
) -> Rates:
    """Run judge_paired on `draws` simulated sessions of `n_prompts` prompts each."""
    cfg = cfg or EquivalenceConfig()
    # Each cell draws its own stream, so a cell's figures do not depend on which others ran.
    rng = np.random.default_rng([seed, n_prompts, round(excess * 1e6), zlib.crc32(floor.name.encode())])
    counts = rng.multinomial(n_prompts, outcome_probabilities(floor, excess), size=draws)
    # A verdict depends on the discordant counts and on whether the replicate
    # changed anything (the deterministic rule) alone: judge each distinct one once.
    keys = np.column_stack([counts[:, 0], counts[:, 1], (counts[:, 1] + counts[:, 2]) == 0])
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    judged = []
    for lever_only, floor_only, fixed in distinct.tolist():
        # Beyond the discordant counts only whether the replicate changed anything
        # matters: one prompt changed by both stands for "it did" where no discordant one says so.
        both = 0 if fixed or floor_only else 1
        judged.append(judge_paired(paired_from_counts(n_prompts, lever_only, floor_only, both), cfg).verdict)
    verdicts = np.array(judged)[inverse.reshape(-1)]
    passed = int(np.count_nonzero(verdicts == PASS))
    no_reference = int(np.count_nonzero(verdicts == NO_REFERENCE))
    return Rates(passed / draws, no_reference / draws)


def table(
    floors: Sequence[Floor] = FLOORS,
    excesses: Sequence[float] = EXCESSES,
    ns: Sequence[int] = NS,
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
) -> dict[tuple[str, float, int], Rates]:
    """(floor name, excess, n prompts) -> rates, over the whole grid."""
    return {
        (floor.name, excess, n): simulate(floor, excess, n, cfg, draws, seed)
        for floor in floors
        for excess in excesses
        for n in ns
    }


def markdown(
    rates: dict[tuple[str, float, int], Rates],
    floors: Sequence[Floor] = FLOORS,
    excesses: Sequence[float] = EXCESSES,
    ns: Sequence[int] = NS,
) -> str:
    """One row per floor and lever: an identical lever's pass rate, a worse lever's catch rate (%)."""
    lines = [
        "| floor (replicate changes / identical lever discordant) | lever | "
        + " | ".join(f"{n} prompts" for n in ns)
        + " |",
        "|---|---|" + "---|" * len(ns),
    ]
    for floor in floors:
        label = f"{floor.name} ({floor.differ_share:.0%} / {floor.discordant_share:.0%})"
        for excess in excesses:
            if excess == 0.0:
                what = "identical: pass"
                cells = [rates[floor.name, excess, n].passed for n in ns]
            else:
                what = f"+{100 * excess:.0f} points: caught"
                cells = [rates[floor.name, excess, n].caught for n in ns]
            lines.append(f"| {label} | {what} | " + " | ".join(f"{100 * c:.1f}" for c in cells) + " |")
        no_ref = [rates[floor.name, 0.0, n].no_reference for n in ns]
        lines.append(
            f"| {label} | identical: no_reference | " + " | ".join(f"{100 * c:.1f}" for c in no_ref) + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--margin", type=float, default=EquivalenceConfig.noninferiority_margin)
    parser.add_argument("--alpha", type=float, default=EquivalenceConfig.alpha)
    parser.add_argument("--min-prompts", type=int, default=EquivalenceConfig.min_prompts)
    args = parser.parse_args(argv)
    cfg = EquivalenceConfig(noninferiority_margin=args.margin, alpha=args.alpha, min_prompts=args.min_prompts)
    rates = table(cfg=cfg, draws=args.draws, seed=args.seed)
    print(
        f"Paired equivalence gate: margin {100 * cfg.noninferiority_margin:.0f} points, "
        f"{1 - cfg.alpha:.0%} upper bound (Tango), min_prompts {cfg.min_prompts}, "
        f"{args.draws:,} draws per cell; % of verdicts"
    )
    print()
    print(markdown(rates))


if __name__ == "__main__":
    main()

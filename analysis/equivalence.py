"""The output-equivalence gate: does a lever change what the model says? Pure.

A lossless lever (suffix decoding, K-pad, dynamic K) must produce van's greedy
output. But in bf16 under concurrency greedy outputs are not reproducible even
with no lever at all: batch composition changes the reduction order, a logit
tie flips, and the texts part ways (on an H200, van against van with async
scheduling off matched 86 of 164 HumanEval outputs over 1,024 tokens). So the
gate compares the lever's divergence from van with van's own run-to-run
divergence, the noise floor, measured by a second greedy van run of the same
prompts (van's replicate).

The paired gate (compare_paired, judge_paired) is a non-inferiority test. Per
prompt: did the lever change van's output, did the replicate? The measure is

    d = P(lever changed it) - P(replicate changed it)
      = P(lever changed, replicate not) - P(replicate changed, lever not),

estimated from the discordant prompts on the same prompts (floor_only -
lever_only) / n. The lever passes only when an upper one-sided (1 - alpha)
confidence bound on d (Tango's score interval for paired proportions, 1998)
lies below the margin applied (applied_margin): a pass is evidence that the
lever changes at most that many more outputs than van's rerun does, not absence
of evidence against it. Where the replicate matched van on every prompt (a
deterministic engine, e.g. float32 on the CPU) any output the lever changed
fails it, however small the share. Fewer than cfg.min_prompts prompts, or too
few for even a lever identical to van to pass at the floor's discordance
(prompts_needed), is no_reference; a bound above the margin otherwise fails.
Neither is ever a pass.

The margin is calibrated on the engine's own non-determinism. An identical
lever's d has standard error about sqrt(D / n), D its discordance with the
replicate (up to 1/2 where runs change half of outputs independently), so a
gate that passes it 95% of the time and fails a lever at the margin 95% of the
time needs a margin of about (z_alpha + z_0.95) sqrt(D / n): 36 points at 46
prompts, 19 at 160, 10 only from ~550. The margin applied is
cfg.noninferiority_margin (10 points: van's own rerun on an H200 changes 32-65%
of greedy bf16 outputs over 1,024 tokens and that share moves by about ten
points from run to run, so a lever within ten points of its floor changes
outputs no more than rerunning van does), widened to that width at the
discordance the replicate's own changed share allows (applied_margin).
analysis/equivalence_power.py measures the gate's pass and catch rates by
simulation (`python -m analysis.equivalence_power`).

With no second van run to measure the floor from (judge, floor None), the gate
asks for exact_match_rate >= min_exact_match_without_floor (1.0 by default:
float32 on CPU is deterministic, so a lossless lever must match every output
there) over at least cfg.min_prompts prompts, else no_reference: a missing
floor never passes a lever for lack of evidence. judge's unpaired rule with a
floor (exact_match_rate >= the floor's - max_exact_match_drop) is absence of
evidence, kept for callers holding two
unpaired comparisons; analysis/verdicts.py judges every lever that has a replicate
by the paired gate.

Levers that change outputs on purpose (W4A4) cannot be judged by exact match.
For them the gate uses a logprob probe (workers/load/probe.py): after its measured
requests each cell scores the same corpus text with `prompt_logprobs`, so both
runs' next-token distributions are read at identical contexts, and the gate
asks for a share of positions whose top token is in the other's top k
(topk_agreement) and a KL estimate over the reference's top k (kl_estimate)
within thresholds (judge_distribution). Lossless levers report both as well.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, replace
from typing import Any

from vocab.schema import EquivalenceConfig

PASS, FAIL, NO_REFERENCE = "pass", "fail", "no_reference"


@dataclass(frozen=True)
class Comparison:
    """How two runs' outputs for the same requests compare."""

    n_prompts: int
    n_exact: int
    # Character index where each differing pair first differs.
    first_divergence_chars: tuple[int, ...]
    # Requests left out because both runs' text is empty: equal, but no evidence
    # (dummy weights emit ids a stand-in tokenizer decodes to nothing).
    n_both_empty: int = 0

    @property
    def exact_match_rate(self) -> float:
        """n_exact / n_prompts (NaN with no prompts in common)."""
        return self.n_exact / self.n_prompts if self.n_prompts else math.nan

    @property
    def first_divergence_median(self) -> float | None:
        return statistics.median(self.first_divergence_chars) if self.first_divergence_chars else None


def first_divergence(a: str, b: str) -> int | None:
    """Index of the first character where a and b differ; None if equal.

    When one is a prefix of the other, the length of the shorter.
    """
    if a == b:
        return None
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare(reference: Mapping[int, str], candidate: Mapping[int, str]) -> Comparison:
    """Compare outputs request by request (keys: request index, the same prompt in both runs)."""
    common = sorted(set(reference) & set(candidate))
    shared = [i for i in common if reference[i] or candidate[i]]
    divergences = [first_divergence(reference[i], candidate[i]) for i in shared]
    differing = tuple(d for d in divergences if d is not None)
    return Comparison(len(shared), len(shared) - len(differing), differing, len(common) - len(shared))


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str


def judge(lever: Comparison, floor: Comparison | None, cfg: EquivalenceConfig) -> Verdict:
    """PASS when the lever diverges from van no more than van diverges from itself (see module doc)."""
    if lever.n_prompts == 0 and lever.n_both_empty:
        return Verdict(
            NO_REFERENCE,
            f"all {lever.n_both_empty} outputs of both runs are empty text: nothing to compare "
            "(a tokenizer that cannot decode the model's ids, e.g. dummy weights with a stand-in tokenizer)",
        )
    if lever.n_prompts == 0:
        return Verdict(NO_REFERENCE, "no requests in common with a van run of the same prompts")
    rate = lever.exact_match_rate
    if floor is not None and floor.n_prompts:
        needed = floor.exact_match_rate - cfg.max_exact_match_drop
        basis = f"van vs van {floor.exact_match_rate:.1%} - {cfg.max_exact_match_drop:.1%}"
    else:
        # No floor: only zero disagreement over enough prompts is evidence; a missing floor excuses nothing.
        if lever.n_prompts < cfg.min_prompts:
            return Verdict(
                NO_REFERENCE,
                f"{lever.n_prompts} prompts in common with van and no second van run for a noise floor: "
                f"needs >= {cfg.min_prompts} (gates.equivalence.min_prompts), every output matching",
            )
        needed = cfg.min_exact_match_without_floor
        basis = "no second van run for a noise floor"
    outcome = PASS if rate >= needed - 1e-12 else FAIL
    return Verdict(
        outcome,
        f"exact match {lever.n_exact}/{lever.n_prompts} = {rate:.1%} "
        f"{'>=' if outcome == PASS else '<'} {needed:.1%} ({basis})",
    )


@dataclass(frozen=True)
class Paired:
    """The lever's and van's replicate's agreement with van, prompt by prompt over the same prompts.

    n_prompts          prompts all three runs answered (both-empty ones left out)
    lever_matches      prompts where the lever's output equals van's
    floor_matches      prompts where van's replicate equals van's
    floor_only         discordant: the replicate matches van, the lever does not (the lever changed it)
    lever_only         discordant: the lever matches van, the replicate does not (the replicate changed it)
    p_value            exact one-sided McNemar: P(X >= floor_only), X ~ Binomial(floor_only + lever_only,
                       1/2); reported beside the verdict, which it no longer decides (module doc)
    lever_prefix_share / floor_prefix_share
                       median over prompts of the share of van's output matched before the first
                       divergence (1.0 when equal): the continuous measure beside the test
    """

    n_prompts: int
    lever_matches: int
    floor_matches: int
    floor_only: int
    lever_only: int
    p_value: float
    lever_prefix_share: float | None
    floor_prefix_share: float | None

    @property
    def excess_changed_share(self) -> float:
        """d estimated: share of prompts the lever changed minus share van's replicate changed (NaN: none)."""
        return (self.floor_only - self.lever_only) / self.n_prompts if self.n_prompts else math.nan

    @property
    def discordant_share(self) -> float:
        """Share of prompts where exactly one of lever and replicate matches van (NaN: none)."""
        return (self.floor_only + self.lever_only) / self.n_prompts if self.n_prompts else math.nan


def binomial_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), exactly."""
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


def tango_score(
    changed_by_lever_only: float, changed_by_floor_only: float, n_prompts: int, d: float
) -> float:
    """Tango's score statistic for H0: P(lever only changed) - P(replicate only changed) = d.

    Tango (1998), "Equivalence test and confidence interval for the difference
    in proportions for the paired-sample design", Statistics in Medicine 17:891-908:

        Z(d) = (b - c - n d) / sqrt(n (2 q + d (1 - d)))

    with b, c the two discordant counts and q the maximum-likelihood estimate of
    P(replicate only changed) under H0, the root of a quadratic (A q^2 + B q + C = 0).
    The variance is taken under H0 rather than at the estimate (Wald), which is
    what keeps the interval's coverage near nominal at small n and with no or few
    discordant prompts. Counts may be fractional (prompts_needed's expected counts).
    Decreasing in d.
    """
    b, c, n = changed_by_lever_only, changed_by_floor_only, n_prompts
    a_coef = 2.0 * n
    b_coef = -b - c + (2.0 * n - b + c) * d
    c_coef = -c * d * (1.0 - d)
    q = (math.sqrt(max(b_coef * b_coef - 4.0 * a_coef * c_coef, 0.0)) - b_coef) / (2.0 * a_coef)
    variance = n * (2.0 * q + d * (1.0 - d))
    numerator = b - c - n * d
    if variance <= 0.0:
        # Only at d = +-1, where every prompt is discordant one way: the data either
        # are exactly that (Z = 0) or rule it out entirely.
        return 0.0 if numerator == 0.0 else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def excess_changed_upper_bound(
    changed_by_lever_only: float, changed_by_floor_only: float, n_prompts: int, alpha: float
) -> float:
    """Upper one-sided (1 - alpha) bound on d (module doc): the largest d Tango's score test keeps.

    Found by bisection on [d estimated, 1] (Z is decreasing in d and 0 at the
    estimate) to 1e-12; NaN with no prompts.
    """
    if n_prompts <= 0:
        return math.nan
    z_alpha = statistics.NormalDist().inv_cdf(1.0 - alpha)
    low = (changed_by_lever_only - changed_by_floor_only) / n_prompts
    high = 1.0
    if tango_score(changed_by_lever_only, changed_by_floor_only, n_prompts, high) >= -z_alpha:
        return high
    while high - low > 1e-12:
        middle = (low + high) / 2.0
        if tango_score(changed_by_lever_only, changed_by_floor_only, n_prompts, middle) >= -z_alpha:
            low = middle
        else:
            high = middle
    return high


def excess_changed_lower_bound(
    changed_by_lever_only: float, changed_by_floor_only: float, n_prompts: int, alpha: float
) -> float:
    """Lower one-sided (1 - alpha) bound on d: the upper bound with the two runs' roles swapped."""
    return -excess_changed_upper_bound(changed_by_floor_only, changed_by_lever_only, n_prompts, alpha)


def prompts_needed(discordant_share: float, margin: float, alpha: float, most: int = 1_000_000) -> int:
    """Fewest prompts at which a lever identical to van (d estimated 0) passes the bound.

    An identical lever is discordant with the replicate on about `discordant_share`
    of prompts, half each way; the bound then shrinks as 1/sqrt(n) (for a share
    above 0) or as 1/n (for none: z^2 / (n + z^2)). The bound is monotone in n,
    so a bisection over n finds the first that passes. `most` when none up to it does.
    """

    def passes(n: int) -> bool:
        half = discordant_share * n / 2.0
        return excess_changed_upper_bound(half, half, n, alpha) < margin

    # Doubling, then bisection: a few dozen bounds whatever the answer.
    low, high = 0, 1
    while not passes(high):
        if high >= most:
            return most
        low, high = high, min(2 * high, most)
    while high - low > 1:  # passes(high), not passes(low)
        middle = (low + high) // 2
        if passes(middle):
            high = middle
        else:
            low = middle
    return high


def prefix_share(reference: str, candidate: str) -> float:
    """Share of `reference` that `candidate` reproduces before they first differ (1.0 when equal)."""
    divergence = first_divergence(reference, candidate)
    if divergence is None:
        return 1.0
    return divergence / len(reference) if reference else 0.0


def compare_paired(
    van: Mapping[Hashable, str], lever: Mapping[Hashable, str], floor: Mapping[Hashable, str]
) -> Paired:
    """Paired agreement over the prompts (keys: prompt ids) that all three runs answered."""
    common = sorted(set(van) & set(lever) & set(floor), key=str)
    shared = [key for key in common if van[key] or lever[key] or floor[key]]
    lever_eq = [lever[key] == van[key] for key in shared]
    floor_eq = [floor[key] == van[key] for key in shared]
    floor_only = sum(1 for a, b in zip(lever_eq, floor_eq, strict=True) if b and not a)
    lever_only = sum(1 for a, b in zip(lever_eq, floor_eq, strict=True) if a and not b)

    def median_share(run: Mapping[Hashable, str]) -> float | None:
        return statistics.median(prefix_share(van[k], run[k]) for k in shared) if shared else None

    return Paired(
        len(shared),
        sum(lever_eq),
        sum(floor_eq),
        floor_only,
        lever_only,
        binomial_tail(floor_only, floor_only + lever_only),
        median_share(lever),
        median_share(floor),
    )


def paired_from_counts(
    n_prompts: int, changed_by_lever_only: int, changed_by_floor_only: int, changed_by_both: int
) -> Paired:
    """The Paired figures from counts alone (no texts, no prefix shares): for simulation and tests."""
    lever_changed = changed_by_lever_only + changed_by_both
    floor_changed = changed_by_floor_only + changed_by_both
    return Paired(
        n_prompts,
        n_prompts - lever_changed,
        n_prompts - floor_changed,
        changed_by_lever_only,
        changed_by_floor_only,
        binomial_tail(changed_by_lever_only, changed_by_lever_only + changed_by_floor_only),
        None,
        None,
    )


def pool(parts: Iterable[Paired]) -> Paired:
    """One Paired over the prompts of several paired judgements of one lever (the sessions of a tune
    that measured the same model, lever, K and corpus, each against its own van and replicate): the
    counts add, the prefix shares are left out.

    Valid under the gate's null: for a lever identical to van, whether the lever or the replicate
    changed a prompt's output is a coin that each session tosses anew (each run's change is
    independent given the prompt and van's output), so the discordant prompts of different sessions
    are uncorrelated in sign even where the same prompt is drawn twice and is fragile every time.
    A worse lever that changes the same prompt in every session makes its units correlated, so
    pooled prompts buy it somewhat less than their count suggests (equivalence_power measures it on
    independent draws)."""
    parts = list(parts)
    n = sum(p.n_prompts for p in parts)
    floor_only = sum(p.floor_only for p in parts)
    lever_only = sum(p.lever_only for p in parts)
    return Paired(
        n,
        sum(p.lever_matches for p in parts),
        sum(p.floor_matches for p in parts),
        floor_only,
        lever_only,
        binomial_tail(floor_only, floor_only + lever_only),
        None,
        None,
    )


# The tune's gate on a lever's path (experiments/decide.py: TuneRules.gate_path_pass, gate_keep_share).
# A lever reaches a deploy through two looks at its equivalence: the stage that keeps it (on what the
# tune has measured of it so far) and the confirmation (on all of it, pooled), on every corpus. An
# identical lever must clear them all `path_pass` of the time: the budget 1 - path_pass is split over
# the corpora and the two looks (Bonferroni: the looks share data, so the path passes at least that
# often), `keep_share` of it to the keep, the rest to the confirmation, whose pooled prompts give it
# the power. Each look's test is judge_paired with identical_pass_rate set to the look's rate.
PATH_PASS = 0.98
KEEP_SHARE = 0.1


def look_pass_rate(
    path_pass: float = PATH_PASS, corpora: int = 2, final: bool = True, keep_share: float = KEEP_SHARE
) -> float:
    """The identical-lever pass rate one look on one corpus is held to (comment above)."""
    budget = (1.0 - path_pass) / max(1, corpora)
    return 1.0 - budget * ((1.0 - keep_share) if final else keep_share)


def at_pass_rate(cfg: EquivalenceConfig, pass_rate: float) -> EquivalenceConfig:
    """`cfg` with an identical lever's pass rate set to `pass_rate` (applied_margin widens to it)."""
    return replace(cfg, identical_pass_rate=pass_rate)


def _points(share: float) -> str:
    """A share as signed percentage points, for verdict reasons."""
    return f"{100.0 * share:+.1f} points"


# z of the one-sided 99% bound on the replicate's changed share that sets the margin's width: a
# floor that looks quieter than it is would give too narrow a margin, which identical levers fail.
FLOOR_BOUND_Z = statistics.NormalDist().inv_cdf(0.99)


def floor_changed_upper(floor_changed: int, n_prompts: int, z: float = FLOOR_BOUND_Z) -> float:
    """Wilson's one-sided upper bound on the share of prompts van's replicate changes (1.0: none)."""
    if n_prompts <= 0:
        return 1.0
    p, z2 = floor_changed / n_prompts, z * z
    centre = p + z2 / (2 * n_prompts)
    spread = z * math.sqrt(p * (1 - p) / n_prompts + z2 / (4 * n_prompts * n_prompts))
    return min(1.0, (centre + spread) / (1 + z2 / n_prompts))


def margin_for(n_prompts: int, discordant_share: float, cfg: EquivalenceConfig) -> float:
    """The margin a lever identical to van clears with probability cfg.identical_pass_rate, or wider.

    An identical lever is discordant with the replicate on `discordant_share`
    of prompts, half each way, so d estimated ~ N(0, discordant_share / n). At
    its identical_pass_rate quantile, z_p sqrt(n D) more discordant prompts
    against it than for it (plus one for the counts' discreteness), Tango's
    upper bound is the narrowest margin that identical lever still passes;
    never narrower than cfg.noninferiority_margin. About (z_alpha + z_p)
    sqrt(D / n): 35 points at 46 prompts and D = 1/2, 19 at 160, 10.4 at 512.
    """
    if n_prompts <= 0:
        return math.nan
    z = statistics.NormalDist().inv_cdf(cfg.identical_pass_rate)
    discordant = n_prompts * discordant_share
    lean = min(z * math.sqrt(discordant) + 1.0, discordant)
    upper = excess_changed_upper_bound((discordant + lean) / 2, (discordant - lean) / 2, n_prompts, cfg.alpha)
    return max(cfg.noninferiority_margin, upper)


def widest_margin(n_prompts: int, cfg: EquivalenceConfig) -> float:
    """The widest margin judge_paired applies at n prompts: at the noisiest floor (half of outputs changed).

    A lever this much worse than van's rerun is caught (not passed) at least
    1 - cfg.alpha of the time on every floor (analysis/equivalence_power.py).
    """
    return margin_for(n_prompts, 0.5, cfg)


def discordant_upper(discordant: int, n_prompts: int) -> float:
    """Wilson's one-sided 99% upper bound on the share of prompts where lever and replicate disagree."""
    return floor_changed_upper(discordant, n_prompts)


def applied_margin(
    n_prompts: int, floor_changed: int, cfg: EquivalenceConfig, discordant: int | None = None
) -> float:
    """The margin judge_paired holds a lever to, from van's own run-to-run change on these prompts.

    The floor measures how noisy the engine is: the replicate changed
    `floor_changed` of `n_prompts` of van's outputs. A lever identical to van is
    at most as discordant with the replicate as two independent runs that each
    change a share p of outputs are, 2 p (1 - p) (runs that change the same
    fragile prompts agree more), so the margin is margin_for at that
    discordance with p the floor's 99% upper bound capped at 1/2. Where the
    lever and the replicate were `discordant` on fewer prompts than that (an
    engine whose fragile prompts are fragile in every run: the H200 tune's
    replicate changed 65% of outputs, suffix disagreed with it on 21%), the 99%
    upper bound on that observed discordance sets it instead: the margin an
    identical lever needs there is narrower, and so is the one a worse lever
    must clear (a worse lever's extra changes raise its own discordance, never
    above the first bound). Never wider than widest_margin; never narrower than
    cfg.noninferiority_margin.
    """
    p_upper = min(0.5, floor_changed_upper(floor_changed, n_prompts))
    share = 2.0 * p_upper * (1.0 - p_upper)
    if discordant is not None:
        share = min(share, discordant_upper(discordant, n_prompts))
    return margin_for(n_prompts, share, cfg)


# The lever the gate must catch, and how often (issue 46 item 4): one whose outputs change ten
# points more often than van's rerun changes them, caught (not passed) at least 80% of the time.
DETECT_EXCESS = 0.10
DETECT_POWER = 0.80


def catch_rate(
    n_prompts: int, discordant_share: float, cfg: EquivalenceConfig, excess: float = DETECT_EXCESS
) -> float:
    """How often the gate catches (does not pass) a lever `excess` worse than van's rerun, approximately.

    The lever is discordant with the replicate on a share D = `discordant_share`
    of the n prompts (t = n D of them; what the gate sees of a worse lever), and
    is held to the margin that discordance sets (applied_margin: margin_for at
    D's 99% bound, at most 1/2). Given t, judge_paired passes it when the
    discordant prompts against it exceed those for it by less than k*, the
    largest difference whose Tango bound stays below the margin; that difference
    is about normal with mean n excess and variance t - n excess^2, so

        catch = 1 - Phi((k* + 1/2 - n excess) / sqrt(t - n excess^2)).

    Within a few points of the simulation (analysis/equivalence_power.py).
    """
    if n_prompts <= 0:
        return 0.0
    t = n_prompts * discordant_share
    margin = margin_for(n_prompts, min(0.5, discordant_upper(round(t), n_prompts)), cfg)

    def passes(k: float) -> bool:
        return excess_changed_upper_bound((t + k) / 2.0, (t - k) / 2.0, n_prompts, cfg.alpha) < margin

    if not passes(-t):
        return 1.0
    low, high = -t, t  # passes(low); find the largest k that passes
    if passes(high):
        return 0.0
    while high - low > 1e-3:
        middle = (low + high) / 2.0
        low, high = (middle, high) if passes(middle) else (low, middle)
    spread = math.sqrt(max(t - n_prompts * excess * excess, 1e-9))
    return 1.0 - statistics.NormalDist().cdf((math.floor(low) + 0.5 - n_prompts * excess) / spread)


def prompts_for_power(
    discordant_share: float,
    cfg: EquivalenceConfig,
    excess: float = DETECT_EXCESS,
    power: float = DETECT_POWER,
    most: int = 100_000,
) -> int:
    """Fewest prompts at which the gate catches a lever `excess` worse `power` of the time (catch_rate).

    An identical lever passes cfg.identical_pass_rate at any count (the margin is
    widened to where it does); what more prompts buy is the catch. At a floor
    where runs disagree on half of prompts (D = 1/2) about 310; at the H200 tune's
    measured 21% about 150. `most` when none up to it does.
    """
    low, high = 0, 1
    while catch_rate(high, discordant_share, cfg, excess) < power:
        if high >= most:
            return most
        low, high = high, min(2 * high, most)
    while high - low > 1:
        middle = (low + high) // 2
        if catch_rate(middle, discordant_share, cfg, excess) >= power:
            high = middle
        else:
            low = middle
    return high


def judge_paired(paired: Paired, cfg: EquivalenceConfig) -> Verdict:
    """PASS only when the lever is shown to change at most the margin more outputs than van's rerun does.

    In order (module doc): fewer than cfg.min_prompts prompts in common is
    NO_REFERENCE; on a deterministic floor (the replicate matched van on every
    prompt) any output the lever changed FAILs; an upper one-sided (1 - cfg.alpha)
    Tango bound on d below the margin applied (applied_margin: calibrated on the
    replicate's own changed share and the number of prompts) PASSes. Otherwise
    the bound did not clear the margin: NO_REFERENCE when even a lever identical
    to van could not have cleared it with these prompts at this discordance and
    the lever is not significantly worse than the replicate (too few prompts to
    tell), else FAIL.
    """
    n = paired.n_prompts
    if n < cfg.min_prompts:
        return Verdict(
            NO_REFERENCE,
            f"{n} prompts in common with van and its replicate; the paired gate needs "
            f">= {cfg.min_prompts} (gates.equivalence.min_prompts: fewer is no evidence either way)",
        )
    figures = (
        f"lever = van on {paired.lever_matches}/{n}, replicate = van on {paired.floor_matches}/{n}; "
        f"discordant {paired.floor_only} against the lever, {paired.lever_only} for it "
        f"(McNemar p = {paired.p_value:.3g})"
    )
    if paired.floor_matches == n and paired.floor_only > 0:
        return Verdict(FAIL, f"{figures}; van is deterministic here, so every changed output is the lever's")
    upper = excess_changed_upper_bound(paired.floor_only, paired.lever_only, n, cfg.alpha)
    bound = (
        f"{figures}; d = share changed by the lever - by the replicate = "
        f"{_points(paired.excess_changed_share)}, {1 - cfg.alpha:.0%} upper bound {_points(upper)}"
    )
    discordant = paired.floor_only + paired.lever_only
    applied = applied_margin(n, n - paired.floor_matches, cfg, discordant)
    margin = f"margin {100 * applied:.1f} points"
    if applied > cfg.noninferiority_margin:
        margin += (
            f" (gates.equivalence.noninferiority_margin {100 * cfg.noninferiority_margin:.0f}, widened "
            f"so that a lever identical to van passes {cfg.identical_pass_rate:.0%} at {n} prompts "
            "on this floor)"
        )
    else:
        margin += " (gates.equivalence.noninferiority_margin)"
    power = power_note(n, discordant, cfg)
    if upper < applied:
        return Verdict(PASS, f"{bound} < {margin}{power}")
    half = (paired.floor_only + paired.lever_only) / 2.0
    identical_could_pass = excess_changed_upper_bound(half, half, n, cfg.alpha) < applied
    lower = excess_changed_lower_bound(paired.floor_only, paired.lever_only, n, cfg.alpha)
    if not identical_could_pass and lower <= 0.0:
        needed = prompts_needed(paired.discordant_share, applied, cfg.alpha)
        return Verdict(
            NO_REFERENCE,
            f"{bound} >= {margin}; too few prompts to tell: at {paired.discordant_share:.0%} discordant, "
            f"even a lever identical to van needs >= {needed} prompts to clear the margin{power}",
        )
    if lower > 0.0:
        return Verdict(
            FAIL,
            f"{bound} >= {margin}: it changes more outputs than van's rerun (lower bound {_points(lower)})"
            f"{power}",
        )
    return Verdict(
        FAIL, f"{bound} >= {margin}: not shown to change outputs no more often than van's rerun{power}"
    )


def power_note(n_prompts: int, discordant: int, cfg: EquivalenceConfig) -> str:
    """'' where the gate has its power (catch_rate >= DETECT_POWER), else which power it has.

    The discordance is the one observed, capped at 1/2 (a worse lever's own changes
    add to it; an identical one at the noisiest floor is discordant on half),
    rounded to a point: the figures are remembered per (n, share, cfg).
    """
    share = round(min(0.5, discordant / n_prompts), 2) if n_prompts else 0.5
    key = (n_prompts, share, astuple(cfg))
    if key not in _POWER_NOTES:
        _POWER_NOTES[key] = _power_note(n_prompts, share, cfg)
    return _POWER_NOTES[key]


# power_note's text per (n prompts, discordant share, config): simulations judge the same counts often.
_POWER_NOTES: dict[tuple[object, ...], str] = {}


def _power_note(n_prompts: int, share: float, cfg: EquivalenceConfig) -> str:
    rate = catch_rate(n_prompts, share, cfg)
    if rate >= DETECT_POWER:
        return ""
    return (
        f"; power: at {n_prompts} prompts and {share:.0%} discordant the gate catches a lever "
        f"{100 * DETECT_EXCESS:.0f} points worse than van's rerun only ~{rate:.0%} of the time "
        f"(>= {DETECT_POWER:.0%} from {prompts_for_power(share, cfg)} prompts)"
    )


# Per position: token -> logprob for the run's top k tokens (token ids or strings).
TopLogprobs = Sequence[Mapping[Hashable, float]]


def topk_agreement(reference: TopLogprobs, candidate: TopLogprobs) -> float:
    """Share of positions where each run's most likely token is in the other run's top k.

    Positions are compared up to the shorter sequence; the caller passes only
    positions with the same context in both runs (the probe scores the same
    prompt text in both, workers/load/probe.py).
    """
    n = min(len(reference), len(candidate))
    if n == 0:
        return math.nan
    agree = 0
    for ref, cand in zip(reference[:n], candidate[:n], strict=True):
        agree += max(ref, key=ref.__getitem__) in cand and max(cand, key=cand.__getitem__) in ref
    return agree / n


def kl_estimate(reference: TopLogprobs, candidate: TopLogprobs, floor_logprob: float = -20.0) -> float:
    """Mean over positions of KL(ref || cand) restricted to the reference's top-k tokens S.

        KL_t = sum over v in S of p(v) * (log p(v) - log q(v)),

    with p and q each renormalised over S, and log q(v) = floor_logprob where v
    is missing from the candidate's top k. Identical runs give exactly 0 however
    little mass the top k holds. An estimate (the tails are unseen), good for
    comparing levers with each other and with van's own runs.
    """
    n = min(len(reference), len(candidate))
    if n == 0:
        return math.nan
    total = 0.0
    for ref, cand in zip(reference[:n], candidate[:n], strict=True):
        cand_on_s = {token: cand.get(token, floor_logprob) for token in ref}
        p_norm = _logsumexp(ref.values())
        q_norm = _logsumexp(cand_on_s.values())
        total += sum(
            math.exp(lp - p_norm) * ((lp - p_norm) - (cand_on_s[token] - q_norm)) for token, lp in ref.items()
        )
    return total / n


def _logsumexp(values: Iterable[float]) -> float:
    values = list(values)
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


@dataclass(frozen=True)
class Distribution:
    """How two runs' next-token distributions compare on the same probe text."""

    n_positions: int
    topk_agreement: float
    kl_nats: float


def compare_distributions(reference: Mapping[Any, Mapping[Hashable, float]],
                          candidate: Mapping[Any, Mapping[Hashable, float]]) -> Distribution:  # fmt: skip
    """Align two probes by position key ((prompt_id, position)) and compare where both scored."""
    shared = sorted(set(reference) & set(candidate))
    ref = [reference[key] for key in shared]
    cand = [candidate[key] for key in shared]
    return Distribution(len(shared), topk_agreement(ref, cand), kl_estimate(ref, cand))


def judge_distribution(lever: Distribution | None, cfg: EquivalenceConfig) -> Verdict:
    """For levers that change outputs on purpose (quantised weights): top-k agreement and KL thresholds."""
    if lever is None or lever.n_positions == 0:
        return Verdict(
            NO_REFERENCE,
            "no logprob probe of this lever and van on the same text (gates.equivalence.probe_prompts)",
        )
    agree_ok = lever.topk_agreement >= cfg.min_topk_agreement
    kl_ok = lever.kl_nats <= cfg.max_kl_nats
    return Verdict(
        PASS if agree_ok and kl_ok else FAIL,
        f"top-{cfg.probe_top_k} agreement {lever.topk_agreement:.3f} "
        f"({'>=' if agree_ok else '<'} {cfg.min_topk_agreement}), "
        f"KL {lever.kl_nats:.4f} nats ({'<=' if kl_ok else '>'} {cfg.max_kl_nats}) "
        f"over {lever.n_positions} positions",
    )

"""The output-equivalence gate: does a lever change what the model says? Pure.

A lossless lever (suffix decoding, K-pad, dynamic K) must produce van's greedy
output. But in bf16 under concurrency greedy outputs are not reproducible even
with no lever at all: batch composition changes the reduction order, a logit
tie flips, and the texts part ways (on an H200, van against van with async
scheduling off matched 86 of 164 HumanEval outputs over 1,024 tokens). So the
gate compares the lever's divergence from van with van's own run-to-run
divergence, the noise floor:

    exact_match_rate(lever, van) >= exact_match_rate(van, van') - max_exact_match_drop

and with no second van run to measure the floor from, it asks for
exact_match_rate >= min_exact_match_without_floor (1.0 by default: float32 on
CPU is deterministic, so a lossless lever must match every output there).

Levers that change outputs on purpose (W4A4) cannot be judged by exact match.
For them the gate uses a logprob probe (workers/probe.py): after its measured
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
from dataclasses import dataclass
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
    floor_only         discordant: the replicate matches van, the lever does not
    lever_only         discordant: the lever matches van, the replicate does not
    p_value            exact one-sided McNemar: P(X >= floor_only), X ~ Binomial(floor_only + lever_only, 1/2)
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


def binomial_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), exactly."""
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


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


def judge_paired(paired: Paired, cfg: EquivalenceConfig) -> Verdict:
    """PASS unless the lever agrees with van significantly less often than van agrees with itself.

    Exact McNemar on the discordant prompts, one-sided at cfg.alpha. Where van's
    replicate matched van on every prompt (a deterministic engine, e.g. float32
    on the CPU), any prompt the lever changed is a difference no noise explains,
    so it fails. Fewer than cfg.min_prompts prompts in common: no evidence
    either way (NO_REFERENCE, which never counts as a pass).
    """
    if paired.n_prompts < cfg.min_prompts:
        return Verdict(
            NO_REFERENCE,
            f"{paired.n_prompts} prompts in common with van and its replicate; the paired test needs "
            f">= {cfg.min_prompts} (gates.equivalence.min_prompts)",
        )
    deterministic = paired.floor_matches == paired.n_prompts
    failed = paired.p_value < cfg.alpha or (deterministic and paired.floor_only > 0)
    figures = (
        f"lever = van on {paired.lever_matches}/{paired.n_prompts}, replicate = van on "
        f"{paired.floor_matches}/{paired.n_prompts}; discordant {paired.floor_only} against the lever, "
        f"{paired.lever_only} for it, McNemar p = {paired.p_value:.3g}"
    )
    if deterministic and paired.floor_only > 0:
        return Verdict(FAIL, f"{figures}; van is deterministic here, so every changed output is the lever's")
    return Verdict(FAIL if failed else PASS, f"{figures} ({'<' if failed else '>='} {cfg.alpha})")


# Per position: token -> logprob for the run's top k tokens (token ids or strings).
TopLogprobs = Sequence[Mapping[Hashable, float]]


def topk_agreement(reference: TopLogprobs, candidate: TopLogprobs) -> float:
    """Share of positions where each run's most likely token is in the other run's top k.

    Positions are compared up to the shorter sequence; the caller passes only
    positions with the same context in both runs (the probe scores the same
    prompt text in both, workers/probe.py).
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

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

Levers that change outputs on purpose (W4A4) cannot be judged by exact match;
for them, where both runs returned top-k logprobs, the gate also reports the
share of positions whose greedy token is in the other's top k and a KL
estimate over the shared top-k support (kl_estimate).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grid.schema import EquivalenceConfig

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


TopLogprobs = Sequence[Mapping[str, float]]


def topk_agreement(reference: TopLogprobs, candidate: TopLogprobs) -> float:
    """Share of positions where each run's most likely token is in the other run's top k.

    Positions are compared up to the shorter sequence; the caller passes only
    positions before the outputs diverge (after it the contexts differ).
    """
    n = min(len(reference), len(candidate))
    if n == 0:
        return math.nan
    agree = 0
    for ref, cand in zip(reference[:n], candidate[:n], strict=True):
        agree += max(ref, key=ref.__getitem__) in cand and max(cand, key=cand.__getitem__) in ref
    return agree / n


def kl_estimate(reference: TopLogprobs, candidate: TopLogprobs, floor_logprob: float = -20.0) -> float:
    """Mean over positions of KL(ref || cand) on the reference's top-k tokens.

        KL_t = sum over v in topk_ref(t) of p_ref(v) * (log p_ref(v) - log p_cand(v)),

    with p_ref renormalised over its top k, and log p_cand(v) = floor_logprob
    where v is missing from the candidate's top k. An estimate (the tails are
    unseen), good for comparing levers with each other and with van's own runs.
    """
    n = min(len(reference), len(candidate))
    if n == 0:
        return math.nan
    total = 0.0
    for ref, cand in zip(reference[:n], candidate[:n], strict=True):
        norm = math.log(sum(math.exp(lp) for lp in ref.values()))
        total += sum(
            math.exp(lp - norm) * (lp - norm - cand.get(token, floor_logprob)) for token, lp in ref.items()
        )
    return total / n

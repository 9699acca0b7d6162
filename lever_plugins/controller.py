"""Pure dynamic-K controller: pick K each step from recent acceptance and the batch size.

Acceptance model: each draft position is accepted with probability p, independently,
until the first rejection (the usual geometric model of speculative decoding).
A step with K draft tokens then yields E[tokens] = sum_{j=0..K} p^j (the accepted
drafts plus the bonus/corrected token). Its cost grows with the tokens verified:
cost = 1 + token_cost x batch_size x (1 + K), where token_cost is the cost of one
verified token relative to a step's fixed cost (weights read, launch overhead).
The controller keeps the K in `ks` with the most tokens per unit cost.

p is estimated from what the previous steps' drafts did: per request, `a` accepted
of `k` drafted is `a` successes and, if a < k, one failure (the maximum-likelihood
estimate of a truncated geometric). Successes and failures are each smoothed with
an exponentially weighted moving average so one odd step does not flip K.
Padded positions count like any others, which is intended: a K longer than the
proposer's drafts mostly adds padding that is rejected, and the estimate shows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

DEFAULT_KS = (4, 6, 12)
# Smoothing weight of the newest step in the acceptance EWMA.
DEFAULT_EWMA_ALPHA = 0.2
# Relative cost of one verified token; 1/512 means a batch of 512 verified tokens
# doubles the step time (roughly a small model on a large GPU).
DEFAULT_TOKEN_COST = 1.0 / 512


def expected_tokens_per_step(p_accept: float, k: int) -> float:
    """sum_{j=0..k} p^j: accepted drafts plus the one token every step samples."""
    return sum(p_accept**j for j in range(k + 1))


def step_cost(k: int, batch_size: int, token_cost: float) -> float:
    """1 + token_cost x batch_size x (1 + k): fixed cost plus the verified tokens."""
    return 1.0 + token_cost * batch_size * (1 + k)


def choose_k(p_accept: float, batch_size: int, ks: Sequence[int], token_cost: float) -> int:
    """The K in `ks` with the most expected tokens per unit step cost (ties: the smaller K)."""
    return max(
        sorted(ks),
        key=lambda k: (
            round(expected_tokens_per_step(p_accept, k) / step_cost(k, batch_size, token_cost), 12),
            -k,
        ),
    )


@dataclass
class AcceptanceEstimate:
    """EWMA of per-position successes and failures; starts at p = 0.5 (one of each)."""

    alpha: float = DEFAULT_EWMA_ALPHA
    successes: float = 1.0
    failures: float = 1.0

    @property
    def p_accept(self) -> float:
        return self.successes / (self.successes + self.failures)

    def update(self, outcomes: Iterable[tuple[int, int]]) -> None:
        """Fold in one step's (drafted, accepted) pairs; a step with no drafts changes nothing."""
        step_s = step_f = 0
        seen = False
        for drafted, accepted in outcomes:
            if drafted <= 0:
                continue
            seen = True
            step_s += min(accepted, drafted)
            step_f += int(accepted < drafted)
        if not seen:
            return
        self.successes = (1 - self.alpha) * self.successes + self.alpha * step_s
        self.failures = (1 - self.alpha) * self.failures + self.alpha * step_f


@dataclass
class DynamicK:
    """One engine's controller: observe the last step, decide this step's K, count decisions."""

    ks: tuple[int, ...] = DEFAULT_KS
    token_cost: float = DEFAULT_TOKEN_COST
    estimate: AcceptanceEstimate = field(default_factory=AcceptanceEstimate)
    steps_by_k: dict[int, int] = field(default_factory=dict)
    last_k: int = 0
    last_batch_size: int = 0

    def __post_init__(self) -> None:
        self.ks = tuple(sorted(set(self.ks)))
        self.steps_by_k = {k: self.steps_by_k.get(k, 0) for k in self.ks}

    @property
    def steps(self) -> int:
        return sum(self.steps_by_k.values())

    def decide(self, outcomes: Iterable[tuple[int, int]], batch_size: int) -> int:
        """K for this step, after folding in the previous step's outcomes; counted."""
        self.estimate.update(outcomes)
        k = choose_k(self.estimate.p_accept, batch_size, self.ks, self.token_cost)
        self.steps_by_k[k] += 1
        self.last_k, self.last_batch_size = k, batch_size
        return k

"""What would make an INVALID cell VALID: the override, computed from the cell's measured rate.

The steady window (workers/load/windows.py) runs from the moment the first
`concurrency` requests all stream to the first completion after the last send,
so it lasts about (measured prompts - concurrency) / (requests completed per
second). At the rate a cell measured, filling `gates.min_window_s` takes

    prompts   = concurrency + ceil(MARGIN x min_window_s x requests_per_s)
    requests_per_s = output tok/s / mean output tokens per request

and where the corpus has too few distinct prompts for that, answers that reach
`load.max_tokens` get longer with it (requests_per_s falls in proportion):

    max_tokens = ceil(max_tokens x MARGIN x min_window_s x requests_per_s / (prompts_at_most - concurrency))

Pure: the figures come in, one line of advice goes out. The `++` form of the
override is valid whether or not the experiment already sizes the corpus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Head-room over the measured rate: the window ends at the first completion after the last send, and
# on a shared CPU two runs of one cell differ by 10-20 % in rate.
MARGIN = 1.3
# Answers whose mean length reaches this share of load.max_tokens are cut by it (so longer with it).
CAPPED_SHARE = 0.9


@dataclass(frozen=True)
class Measured:
    """What an INVALID cell measured and ran with."""

    corpus: str
    reasons: str
    window_s: float | None
    output_tok_per_s: float | None  # the window's rate, else the whole run's
    mean_output_tokens: float | None
    num_prompts: int
    warmup_requests: int
    concurrency: int
    max_tokens: int
    # Distinct prompts the corpus has (None: not known here).
    distinct_prompts: int | None = None


def window_short(reasons: str | None) -> bool:
    """Whether a window gate (its length, or its completed requests) is among the reasons."""
    parts = [part.strip() for part in str(reasons or "").split(";")]
    return any(part.startswith("window ") or " requests in window < " in part for part in parts)


def fix_line(m: Measured, min_window_s: float, min_requests: int) -> str | None:
    """The override that would fill the window at the measured rate, in words; None when the
    reasons are not the window's or the rate is unknown."""
    if not window_short(m.reasons) or not m.output_tok_per_s or not m.mean_output_tokens:
        return None
    per_s = m.output_tok_per_s / m.mean_output_tokens  # requests completed per second
    by_window = m.concurrency + math.ceil(MARGIN * min_window_s * per_s)
    by_requests = m.concurrency + math.ceil(MARGIN * min_requests)
    prompts = max(by_window, by_requests, m.num_prompts + 1)
    rate = (
        f"at the measured {m.output_tok_per_s:,.1f} tok/s ({per_s:.2f} requests/s of "
        f"{m.mean_output_tokens:.0f} tokens)"
    )
    override = f"++grid.num_prompts.{m.corpus}={prompts}"
    if m.distinct_prompts is None or prompts + m.warmup_requests <= m.distinct_prompts:
        return f"fix: {override}: {rate} that fills gates.min_window_s={min_window_s:g} s"
    most = m.distinct_prompts - m.warmup_requests
    room = (
        f"corpus '{m.corpus}' has {m.distinct_prompts} distinct prompts ({most} measured at most after "
        f"{m.warmup_requests} warm-up), not the {prompts} needed"
    )
    shorter = f"or accept a shorter window: gates.min_window_s={max(math.floor(m.window_s or 0), 1)}"
    if most <= m.concurrency:
        return f"fix: a larger corpus: {room}; {shorter}"
    if m.mean_output_tokens >= CAPPED_SHARE * m.max_tokens:
        needed = MARGIN * min_window_s * per_s / (most - m.concurrency)
        tokens = math.ceil(m.max_tokens * needed)
        return (
            f"fix: load.max_tokens={tokens} ++grid.num_prompts.{m.corpus}={most}: {room}, and its answers "
            f"reach load.max_tokens={m.max_tokens}, so longer ones fill the window {rate}; {shorter}"
        )
    return (
        f"fix: a larger corpus: {room}; its answers end before load.max_tokens={m.max_tokens} "
        f"(mean {m.mean_output_tokens:.0f} tokens), so a larger max_tokens would not lengthen them; {shorter}"
    )


def planned_window_s(
    num_prompts: int, concurrency: int, tok_per_s: float, mean_output_tokens: float
) -> float:
    """The steady window a cell should get at an expected rate: (prompts - concurrency) / requests
    completed per second (module doc), 0 where the prompts do not exceed the concurrency."""
    per_s = tok_per_s / mean_output_tokens
    return max(num_prompts - concurrency, 0) / per_s


def plan_warning(m: Measured, rate_source: str, min_window_s: float, min_requests: int) -> str | None:
    """`grid plan`'s warning for a corpus whose prompts cannot fill the window at the expected rate
    (`m.output_tok_per_s`, from `rate_source`), with the override that would; None when they do."""
    if not m.output_tok_per_s or not m.mean_output_tokens:
        return None
    window = planned_window_s(m.num_prompts, m.concurrency, m.output_tok_per_s, m.mean_output_tokens)
    if window >= min_window_s:
        return None
    planned = Measured(**{**m.__dict__, "reasons": f"window {window:.1f} s < {min_window_s:g} s"})
    fix = fix_line(planned, min_window_s, min_requests)
    if not fix:
        return None
    return (
        f"corpus '{m.corpus}': {m.num_prompts} measured prompts at concurrency {m.concurrency} fill about "
        f"{window:.1f} s of the {min_window_s:g} s window (gates.min_window_s) at {m.output_tok_per_s:,.0f} "
        f"tok/s ({rate_source}), so its cells would be INVALID; "
        + fix.replace("at the measured", "at the expected")
    )

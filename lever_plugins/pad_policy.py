"""Pure draft-shaping policy: every decoding request's draft becomes exactly K tokens.

Why pad at all: suffix decoding proposes a different number of tokens per
request, so a decode batch has ragged query lengths and misses the FULL CUDA
graphs that are captured for uniform (1 + K)-token decode rows. Padded tokens
are verified like any draft token, so they are accepted only where the target
model agrees and the output is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# A real token id, in range for every vocabulary: the draft ids are also the
# target model's input ids at the draft positions (an embedding lookup), and the
# CPU rejection kernel does not skip negative ids. vLLM itself fills drafts with
# zeros when its drafter input does not fit, so 0 is a value the engine already
# feeds through this path. Accepted only when the target's own token is 0.
PAD_TOKEN_ID = 0


@dataclass
class PadStats:
    """What one shaping pass did, for the plugins' counters."""

    drafts: int = 0  # non-empty shaped drafts (vLLM counts those as drafts too)
    draft_tokens: int = 0  # tokens in the shaped drafts
    padded_tokens: int = 0  # tokens added after the proposer's own draft
    truncated_tokens: int = 0  # proposer tokens dropped beyond K

    def add(self, other: PadStats) -> None:
        self.drafts += other.drafts
        self.draft_tokens += other.draft_tokens
        self.padded_tokens += other.padded_tokens
        self.truncated_tokens += other.truncated_tokens


def draft_budget(k: int, num_tokens: int, max_model_len: int) -> int:
    """Draft length for a request holding `num_tokens` tokens: K, or less near max_model_len.

    A step writes the draft plus one sampled token, so num_tokens + draft + 1 must stay
    within max_model_len (the same bound vLLM's suffix proposer applies).
    """
    return max(0, min(k, max_model_len - num_tokens - 1))


def fit_draft(draft: Sequence[int], length: int, pad_id: int = PAD_TOKEN_ID) -> list[int]:
    """`draft` truncated or padded with `pad_id` to exactly `length` tokens."""
    return [*draft[:length], *[pad_id] * max(0, length - len(draft))]


def shape_drafts(
    drafts: Sequence[Sequence[int]],
    sampled_token_ids: Sequence[Sequence[int]],
    num_tokens: Sequence[int],
    k: int,
    max_model_len: int,
    pad_id: int = PAD_TOKEN_ID,
) -> tuple[list[list[int]], PadStats]:
    """Every decoding request's draft at exactly its budget; partial prefills stay empty.

    A request with no sampled token this step is a partial prefill (its prompt is
    not done); vLLM ignores drafts for it, and giving it one would only waste work.
    """
    shaped: list[list[int]] = []
    stats = PadStats()
    for draft, sampled, n_tokens in zip(drafts, sampled_token_ids, num_tokens, strict=True):
        if not sampled:
            shaped.append([])
            continue
        length = draft_budget(k, int(n_tokens), max_model_len)
        shaped.append(fit_draft(draft, length, pad_id))
        stats.drafts += int(length > 0)
        stats.draft_tokens += length
        stats.padded_tokens += max(0, length - len(draft))
        stats.truncated_tokens += max(0, len(draft) - length)
    return shaped, stats

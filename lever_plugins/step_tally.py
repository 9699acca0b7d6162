"""Pure per-K tally of what vLLM did with the drafts the dynk controller shaped (no vLLM import).

vLLM verifies a step's drafts in the *next* forward pass, and its CUDA-graph
dispatcher picks FULL only for a uniform decode batch whose query length is
1 + the engine's num_speculative_tokens (max K for dynk). A step the
controller ran at a smaller K therefore cannot replay a FULL graph. To show
that cost per K, each forward pass is charged to the K of the drafts it
verified, together with the runtime mode the dispatcher returned for it:

- drafts_by_k[K]: requests whose K-token draft was verified (what the server
  counts in vllm:spec_decode_num_drafts; finished requests' last drafts, which
  the scheduler drops, are not counted);
- modes_by_k[K][mode]: forward passes by runtime mode ("full", "piecewise",
  "none"); K = 0 holds passes that verified no draft (prefill-only steps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# Runtime modes of vLLM's CUDAGraphMode that a dispatch can return, lower-cased for the log.
MODES = ("full", "piecewise", "none")
# Passes that verified no draft are charged to this K.
NO_DRAFT_K = 0


def mode_name(mode: object) -> str:
    """'full' / 'piecewise' / 'none' from a CUDAGraphMode (or its name); anything else as is, lower-cased."""
    return str(getattr(mode, "name", mode)).lower()


def verified_drafts(
    req_ids: Iterable[str], sampled_token_ids: Iterable[list[int]], last_draft_len: Mapping[str, int]
) -> int:
    """Requests that sampled this step and had a non-empty draft from the previous step: verified now."""
    return sum(
        1
        for req_id, sampled in zip(req_ids, sampled_token_ids, strict=True)
        if sampled and last_draft_len.get(req_id, 0) > 0
    )


@dataclass
class StepTally:
    """Cumulative per-K counts of verified drafts and of forward passes by CUDA-graph runtime mode."""

    ks: tuple[int, ...]
    drafts_by_k: dict[int, int] = field(default_factory=dict)
    modes_by_k: dict[int, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Every key exists from the start: the log line has a fixed shape, and a
        # reader thread never sees a dict change size while it formats one.
        self.drafts_by_k = {k: self.drafts_by_k.get(k, 0) for k in self.ks}
        self.modes_by_k = {
            k: {mode: self.modes_by_k.get(k, {}).get(mode, 0) for mode in MODES}
            for k in (NO_DRAFT_K, *self.ks)
        }

    def reset_ks(self, ks: tuple[int, ...]) -> None:
        """Keep only `ks` (the controller's set after it was fitted to the engine's K)."""
        self.ks = ks
        self.__post_init__()

    def record(self, k: int, drafts: int, mode: str | None) -> None:
        """One forward pass that verified `drafts` drafts shaped to `k`; `mode` None: no dispatch seen."""
        k = k if drafts > 0 and k in self.drafts_by_k else NO_DRAFT_K
        if k != NO_DRAFT_K:
            self.drafts_by_k[k] += drafts
        if mode is not None:
            counts = self.modes_by_k[k]
            counts[mode] = counts.get(mode, 0) + 1

"""The record types the store writes, which the workers fill: one measured request, one probe row.

They live here, not in workers/, so the store names what it writes without importing the
layer above it (data flows workers -> store); workers.load re-exports them where they are made.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field


@dataclass
class RequestRecord:
    """One request as measured: raw perf-counter timestamps and the server's counts."""

    request_idx: int
    prompt_id: str
    phase: str
    send_ns: int
    end_ns: int = 0
    # perf_counter_ns of each content chunk: array('q') (8 bytes a chunk; lists are converted).
    chunk_ns: array = field(default_factory=lambda: array("q"))
    # Tokens in each content chunk (server token_ids), array('i'); None if not reported.
    chunk_tokens: array | None = None
    n_chunks: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    error_message: str | None = None
    output_text: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.chunk_ns, array):
            self.chunk_ns = array("q", self.chunk_ns)
        if self.chunk_tokens is not None and not isinstance(self.chunk_tokens, array):
            self.chunk_tokens = array("i", self.chunk_tokens)


@dataclass(frozen=True)
class ProbeRow:
    """One scored position: the top-k token ids and their logprobs, most likely first."""

    prompt_id: str
    position: int
    token_ids: list[int]
    logprobs: list[float]

"""The longest stall of a measured load: time inside the window with no token on any stream and no
engine step. Pure.

A frozen engine (SIGSTOP, swapped out, a step that hangs) sends nothing while
its clients wait, and with no request timing out every other gate passes it
(issue 45: 40 s stopped gave a VALID cell). The /metrics scrapes cannot judge
it alone: those sent while it is stopped time out (counted, workers/signals/server_load.py).
The evidence is the client's own chunk stamps, which never time out, and the
scrapes that answered: an engine whose token counters rose between two
answers close together stepped then, even if no stream saw a token (the
client was held up, which the loop-lag gate judges).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vocab.schema import GateConfig
from workers.load.client import RequestRecord
from workers.load.windows import Window
from workers.signals.server_load import LoadSample

# Two answered scrapes further apart than this (the sampler asks every 0.5 s; the ones between
# timed out) say nothing of when between them the engine stepped: they are not evidence.
MAX_STEP_SPAN_NS = 1_500_000_000


@dataclass(frozen=True)
class Stall:
    start_ns: int
    end_ns: int

    @property
    def length_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def step_spans(samples: Sequence[LoadSample]) -> list[tuple[int, int]]:
    """(t0, t1) of consecutive answered scrapes at most MAX_STEP_SPAN_NS apart between which the
    engine's token counters rose: it took a step somewhere in there."""
    known = [s for s in samples if s.tokens is not None]
    return [
        (a.t_ns, b.t_ns)
        for a, b in itertools.pairwise(known)
        if b.t_ns - a.t_ns <= MAX_STEP_SPAN_NS and (b.tokens or 0.0) > (a.tokens or 0.0)
    ]


def token_stamps(records: Sequence[RequestRecord], window: Window) -> np.ndarray:
    """Every stream's chunk stamps inside [start, end], sorted."""
    stamps = [np.frombuffer(r.chunk_ns, dtype=np.int64) for r in records if len(r.chunk_ns)]
    every = np.sort(np.concatenate(stamps)) if stamps else np.empty(0, dtype=np.int64)
    return every[(every >= window.start_ns) & (every <= window.end_ns)]


def longest_stall(records: Sequence[RequestRecord], samples: Sequence[LoadSample], window: Window) -> Stall:
    """The longest stretch of the window covered by no token stamp and no step span.

    Sweep over the covered intervals (a stamp is one of no length) in order of their start;
    a stretch between the end of what is covered so far and the next start is uncovered.
    """
    covered = sorted([(int(t), int(t)) for t in token_stamps(records, window)] + step_spans(samples))
    best, at = Stall(window.start_ns, window.start_ns), window.start_ns
    for start, end in covered:
        gap_end = min(start, window.end_ns)
        if gap_end - at > best.end_ns - best.start_ns:
            best = Stall(at, gap_end)
        at = max(at, end)
    if window.end_ns - at > best.end_ns - best.start_ns:
        best = Stall(at, window.end_ns)
    return best


def itl_ms_p99(records: Sequence[RequestRecord], window: Window, stall: Stall) -> float | None:
    """99th percentile of the streams' gaps between consecutive chunks inside the window, in ms,
    the gaps that span the stall left out: what the engine's slowest normal steps take."""
    gaps: list[np.ndarray] = []
    for record in records:
        stamps = np.frombuffer(record.chunk_ns, dtype=np.int64)
        inside = stamps[(stamps >= window.start_ns) & (stamps <= window.end_ns)]
        if len(inside) < 2:
            continue
        before, after = inside[:-1], inside[1:]
        overlaps = (before < stall.end_ns) & (after > stall.start_ns)
        gaps.append((after - before)[~overlaps])
    every = np.concatenate(gaps) if gaps else np.empty(0)
    return float(np.percentile(every, 99)) / 1e6 if len(every) else None


def stall_limit_s(itl_p99_ms: float | None, gates: GateConfig) -> float:
    """max(gates.stall_floor_s, gates.stall_itl_multiple x the inter-token p99)."""
    scaled = 0.0 if itl_p99_ms is None else gates.stall_itl_multiple * itl_p99_ms / 1e3
    return max(gates.stall_floor_s, scaled)


def columns(
    records: Sequence[RequestRecord], samples: Sequence[LoadSample], window: Window | None, gates: GateConfig
) -> dict[str, float | int | None]:
    """stall_max_s, stall_start_ns, stall_itl_ms_p99 and stall_limit_s of the window (None without one)."""
    if window is None:
        return {"stall_max_s": None, "stall_start_ns": None, "stall_itl_ms_p99": None, "stall_limit_s": None}
    stall = longest_stall(records, samples, window)
    itl = itl_ms_p99(records, window, stall)
    return {
        "stall_max_s": stall.length_s,
        "stall_start_ns": stall.start_ns,
        "stall_itl_ms_p99": itl,
        "stall_limit_s": stall_limit_s(itl, gates),
    }

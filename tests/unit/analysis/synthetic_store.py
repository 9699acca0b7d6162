"""A small hand-made store with known answers, written through store.writer like the workers do.

Two sessions, two models, corpora chat and mix, levers van / suffix (K 8) / bestkpad (K 4, 8, 12),
three interleaved repeats per compared cell (same session and repeat index: paired), judged by
analysis/decision.py (90 % paired t-interval on log ratios wholly beyond the drift band).

  anchors (van, llama31_8b, chat): S1 100 -> 102, band |ln 1.02| = 1.980 %; S2 104 -> 106, 1.905 %
  llama31_8b (S1), mix: van 99 / 101 / 100, suffix 130 / 132 / 128 (+ one INVALID repeat at 500),
      bestkpad K4 140 / 142 / 138, K8 157 / 159 / 158, K12 160 / 158 / 162
      -> best K on mix: K12 over K8 is within noise (K12 / K8 ~ +1.3 %, interval reaches below 1),
         K12 over K4 a real gain -> K8
      -> final (van -> suffix -> bestkpad K8, each a real gain): bestkpad K=8, 1.580x, real gain
  llama31_8b chat: bestkpad K4 120 / 121 / 119, K8 121 / 122 / 120, K12 119 / 118 / 120
      -> K8 / K4 = +0.83 % every repeat: interval within the band -> K4
  qwen25_7b (S2), mix: van 200 / 201 / 199, suffix 203 / 204 / 202 -> +1.5 %, within the 1.905 % band:
      no lever is a real gain, the final lever is van (1.000x)
  qwen25_7b chat: van 190 / 191 / 189, suffix 220 / 221 / 219
  geometric mean of x over van: sqrt(1.580 * 1.000)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from store.atomic import write_json
from store.layout import StoreLayout
from store.writer import write_ok_attempt
from workers.load.client import RequestRecord

S1 = "20260101T000000Z-aaaaaa"
S2 = "20260102T000000Z-bbbbbb"
LLAMA_SPEEDUP = ((157 / 99) * (159 / 101) * (158 / 100)) ** (1 / 3)
GEOMEAN = LLAMA_SPEEDUP**0.5

# (session, model, corpus, lever, k, repeat, tok/s, valid)
CELLS = [
    (S1, "llama31_8b", "mix", "van", 0, 0, 99.0, True),
    (S1, "llama31_8b", "mix", "van", 0, 1, 101.0, True),
    (S1, "llama31_8b", "mix", "suffix", 8, 0, 130.0, True),
    (S1, "llama31_8b", "mix", "suffix", 8, 3, 500.0, False),
    (S1, "llama31_8b", "mix", "bestkpad", 4, 0, 150.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 8, 0, 157.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 8, 1, 159.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 12, 0, 160.0, True),
    (S1, "llama31_8b", "chat", "van", 0, 0, 100.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 4, 0, 120.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 8, 0, 121.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 12, 0, 119.0, True),
    (S2, "qwen25_7b", "mix", "van", 0, 0, 200.0, True),
    (S2, "qwen25_7b", "mix", "suffix", 8, 0, 203.0, True),
    (S2, "qwen25_7b", "chat", "van", 0, 0, 190.0, True),
    (S2, "qwen25_7b", "chat", "suffix", 8, 0, 220.0, True),
    # further repeats (appended so that the cell keys above stay c000..c015)
    (S1, "llama31_8b", "mix", "van", 0, 2, 100.0, True),
    (S1, "llama31_8b", "mix", "suffix", 8, 1, 132.0, True),
    (S1, "llama31_8b", "mix", "suffix", 8, 2, 128.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 4, 1, 142.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 4, 2, 138.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 8, 2, 158.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 12, 1, 158.0, True),
    (S1, "llama31_8b", "mix", "bestkpad", 12, 2, 162.0, True),
    (S1, "llama31_8b", "chat", "van", 0, 1, 101.0, True),
    (S1, "llama31_8b", "chat", "van", 0, 2, 99.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 4, 1, 121.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 4, 2, 119.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 8, 1, 122.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 8, 2, 120.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 12, 1, 118.0, True),
    (S1, "llama31_8b", "chat", "bestkpad", 12, 2, 120.0, True),
    (S2, "qwen25_7b", "mix", "van", 0, 1, 201.0, True),
    (S2, "qwen25_7b", "mix", "van", 0, 2, 199.0, True),
    (S2, "qwen25_7b", "mix", "suffix", 8, 1, 204.0, True),
    (S2, "qwen25_7b", "mix", "suffix", 8, 2, 202.0, True),
    (S2, "qwen25_7b", "chat", "van", 0, 1, 191.0, True),
    (S2, "qwen25_7b", "chat", "van", 0, 2, 189.0, True),
    (S2, "qwen25_7b", "chat", "suffix", 8, 1, 221.0, True),
    (S2, "qwen25_7b", "chat", "suffix", 8, 2, 219.0, True),
]
# (session, position, tok/s)
ANCHORS = [(S1, "start", 100.0), (S1, "end", 102.0), (S2, "start", 104.0), (S2, "end", 106.0)]


def records(n: int = 2) -> list[RequestRecord]:
    return [
        RequestRecord(
            i, f"p{i}", "measure", send_ns=i, end_ns=i + 10, chunk_ns=[i + 1], n_chunks=1, completion_tokens=3
        )
        for i in range(n)
    ]


def _write(layout: StoreLayout, n: int, session: str, summary: dict) -> None:
    tags = {"session_id": session, "cell_key": f"c{n:03d}", "attempt_id": f"{session}-{n:08x}"}
    write_ok_attempt(layout, tags, records(), {"host": f"node-{session[-1]}", **summary})


def write_cells(layout: StoreLayout) -> None:
    for n, (session, model, corpus, lever, k, repeat, tok_s, valid) in enumerate(CELLS):
        summary = {"model": model, "corpus": corpus, "lever": lever, "k": k, "repeat": repeat}
        summary.update(output_tok_per_s=tok_s, valid=valid, anchor=None)
        summary["invalid_reasons"] = None if valid else "concurrency held 40% < 90%"
        _write(layout, n, session, summary)


def write_cell(layout: StoreLayout, session: str, n: int, key: str, summary: dict) -> None:
    """One ok, VALID, non-anchor cell: `summary` holds model, corpus, lever, k, repeat, output_tok_per_s."""
    tags = {"session_id": session, "cell_key": key, "attempt_id": f"{session}-{n:08x}"}
    write_ok_attempt(layout, tags, records(), {"valid": True, "anchor": None, **summary})


def write_anchor(
    layout: StoreLayout, session: str, n: int, position: str, tok_s: float, **where: object
) -> None:
    """The session's drift anchor at `position` (start/end): van on llama31_8b/chat unless `where` says."""
    summary = {"model": "llama31_8b", "corpus": "chat", "lever": "van", "k": 0, "repeat": 0, **where}
    summary.update(output_tok_per_s=tok_s, valid=True, anchor=position)
    # The anchor cell has one key per position, the same in every session (grid/plan/anchor.py).
    tags = {"session_id": session, "cell_key": f"anchor-{position}", "attempt_id": f"{session}-{n:08x}"}
    write_ok_attempt(layout, tags, records(), summary)


def write_anchors(layout: StoreLayout) -> None:
    for n, (session, position, tok_s) in enumerate(ANCHORS, start=100):
        write_anchor(layout, session, n, position, tok_s)


def write_sessions(layout: StoreLayout) -> None:
    gpu = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1234", "sm_clock_mhz": 1980, "mem_clock_mhz": 3201}
    for session, day in ((S1, "01"), (S2, "02")):
        write_json(
            layout.session_file(session),
            {
                "session_id": session,
                "config_hash": "abc",
                "hosts": [f"node-{session[-1]}"],
                "gpus": [gpu] if session == S1 else [],
                "driver_version": "570.1" if session == S1 else None,
                "vllm_version": "0.26.0",
                "started_at": f"2026-01-{day}T00:00:00+00:00",
                "ended_at": f"2026-01-{day}T02:00:00+00:00",
            },
        )


EQUIVALENCE_ROW = {
    "session_id": S1,
    "model": "llama31_8b",
    "corpus": "mix",
    "lever": "bestkpad",
    "k": 8,
    "cell_key": "c005",
    "reference_cell_key": "c000",
    "n_prompts": 64,
    "exact_match_rate": 1.0,
    "noise_floor_exact_match_rate": 1.0,
    "first_divergence_chars_median": None,
    "verdict": "pass",
    "reason": "greedy outputs equal van's",
}


# Every lever configuration measured passed the gate (analysis/gate.py clears only a 'pass'
# for the model, lever, K and corpus); the first row is the one tests look at.
EQUIVALENCE_ROWS = [EQUIVALENCE_ROW] + [
    {**EQUIVALENCE_ROW, "model": m, "corpus": c, "lever": lv, "k": k, "cell_key": None}
    for m, c, lv, k in sorted({(m, c, lv, k) for _, m, c, lv, k, *_ in CELLS if lv != "van"})
    if (m, c, lv, k) != ("llama31_8b", "mix", "bestkpad", 8)
]


def write_equivalence(layout: StoreLayout, rows: list[dict] | None = None) -> None:
    path = layout.equivalence_file(S1)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows or EQUIVALENCE_ROWS), path)


def build_store(root: Path, equivalence: bool = True) -> Path:
    """Write the whole synthetic store under `root` and return it."""
    layout = StoreLayout(root)
    write_cells(layout)
    write_anchors(layout)
    write_sessions(layout)
    if equivalence:
        write_equivalence(layout)
    return root

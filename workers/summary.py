"""A cell's row of summary.parquet: its figures from the measured requests, and the one place the
typed row (store/records.py: CellSummary) is put together from the columns of each part."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from store.records import CellSummary
from vocab.cells import Cell
from vocab.schema import GateConfig
from workers.context import RunContext
from workers.engine.log import read_effective_config
from workers.engine.served import Reuse
from workers.load import windows
from workers.load.client import LoopLag, RequestRecord
from workers.load.prompts import Corpus, Schedule, prompt_seed
from workers.signals import metrics, stall
from workers.signals.counters import ServerCounters
from workers.signals.gates import GateInputs, evaluate
from workers.signals.server_load import LoadSample
from workers.signals.server_load import columns as server_load_columns


def summary_row(
    measured: dict[str, Any],
    cell: Cell,
    ctx: RunContext,
    ready_s: float,
    version: str | None,
    history: dict[str, Any],
    engine_log: Path,
) -> CellSummary:
    """The cell's row: what run_cell measured (workers/cell.py), the cell, the engine it ran on and
    where, what the launch had been through before it (workers/launch.py: ready_for_cell) and what
    the engine's log says it ran with. A column named twice, missing or unknown is a TypeError."""
    return CellSummary(
        **measured,
        **cell.as_record(),
        engine_ready_s=ready_s,
        engine_version=version,
        **ctx.placement(),
        **history,
        **read_effective_config(engine_log),
    )


def streamed_tokens(record: RequestRecord) -> int | None:
    """Output tokens the client received, counted from the streamed token ids; None without them."""
    return None if record.chunk_tokens is None else int(sum(record.chunk_tokens))


def stream_checks(records: list[RequestRecord]) -> dict[str, int]:
    """Per request: do the streamed token ids add up to the server's usage.completion_tokens?"""
    done = metrics.ok(records)
    counts = [streamed_tokens(r) for r in done]
    return {
        "stream_usage_mismatches": sum(
            1 for r, n in zip(done, counts, strict=True) if n is not None and n != r.completion_tokens
        ),
        "requests_without_token_ids": sum(1 for n in counts if n is None),
    }


def summarize(
    records: list[RequestRecord],
    delta: ServerCounters,
    cpu_s: float,
    lag: LoopLag,
    concurrency: int,
    gates: GateConfig,
    server_load: list[LoadSample] | None = None,
    scrapes_failed_ns: list[int] | None = None,
    engine_wait_share: float | None = None,
) -> dict[str, Any]:
    """The cell's figures from its measured requests, the server's counter deltas and its load gauges
    (with the times of the scrapes that failed), with the validity gates' verdict on them."""
    done = metrics.ok(records)
    window = windows.steady_window(records, concurrency)
    wall_s = (max(r.end_ns for r in records) - min(r.send_ns for r in records)) / 1e9 if records else 0.0
    checks = stream_checks(records)
    load_columns: dict[str, Any] = server_load_columns(
        server_load or [],
        window.start_ns if window else None,
        window.end_ns if window else None,
        scrapes_failed_ns,
    )
    figures: dict[str, Any] = {
        "n_requests": len(records),
        "n_ok": len(done),
        "n_errors": len(records) - len(done),
        "output_tokens": sum(r.completion_tokens or 0 for r in done),
        # Headline: tokens that arrived inside the steady-state window / its length.
        "output_tok_per_s": windows.window_output_tok_per_s(records, window) if window else None,
        # What `vllm bench serve` reports: completed tokens / first send to last completion.
        "bench_output_tok_per_s": metrics.whole_run_output_tok_per_s(records),
        "window_start_ns": window.start_ns if window else None,
        "window_end_ns": window.end_ns if window else None,
        "window_s": window.length_s if window else None,
        "window_requests_completed": windows.completed_in_window(records, window) if window else 0,
        # The client's own in-flight count: held by construction in a closed loop, kept for reference.
        "window_mean_in_flight": windows.mean_in_flight(records, window) if window else None,
        **load_columns,
        # The longest stretch of the window with no token on any stream and no engine step.
        **stall.columns(records, server_load or [], window, gates),
        # Every streamed token, errors included: the server counted those too.
        "streamed_output_tokens": sum(streamed_tokens(r) or 0 for r in records),
        **checks,
        "chunk_tokens_exact": all(r.chunk_tokens is not None for r in done),
        "ttft_ms_p50": metrics.median_or_none([metrics.ttft_ms(r) for r in done]),
        "tpot_ms_p50": metrics.median_or_none([metrics.tpot_ms(r) for r in done]),
        # Per engine step as a stream sees it: its length and the tokens it brought (workers/load/windows.py).
        "chunk_gap_ms_p50": windows.window_chunk_gap_ms_p50(records, window) if window else None,
        "tokens_per_chunk": windows.window_tokens_per_chunk(records, window) if window else None,
        "acceptance_rate": metrics.acceptance_rate(delta.spec_accepted_tokens, delta.spec_draft_tokens),
        "draft_tokens_per_draft": metrics.draft_tokens_per_draft(delta.spec_draft_tokens, delta.spec_drafts),
        "client_cpu_s": cpu_s,
        "client_cpu_share": cpu_s / wall_s if wall_s else 0.0,
        "loop_lag_p99_ms": lag.p99_ms(),
        **delta.as_columns(),
    }
    return {**figures, **verdict(figures, delta, concurrency, gates, engine_wait_share)}


def verdict(
    figures: dict[str, Any],
    delta: ServerCounters,
    concurrency: int,
    gates: GateConfig,
    engine_wait_share: float | None,
) -> dict[str, object]:
    """The validity gates on a cell's figures (workers/signals/gates.py): gate_*, valid, invalid_reasons."""
    inputs = GateInputs(
        window_s=figures["window_s"],
        requests_in_window=figures["window_requests_completed"],
        errors=figures["n_errors"],
        server_running_mean=figures["srv_running_mean"],
        concurrency=concurrency,
        client_cpu_share=figures["client_cpu_share"],
        loop_lag_p99_ms=figures["loop_lag_p99_ms"],
        client_output_tokens=figures["streamed_output_tokens"],
        server_output_tokens=delta.generation_tokens,
        server_waiting_max=figures["srv_waiting_max"],
        server_preemptions=delta.preemptions,
        engine_wait_share=engine_wait_share,
        stream_usage_mismatches=figures["stream_usage_mismatches"],
        requests_without_token_ids=figures["requests_without_token_ids"],
        stall_s=figures["stall_max_s"],
        stall_limit_s=figures["stall_limit_s"],
        stall_itl_ms_p99=figures["stall_itl_ms_p99"],
        scrapes_failed=figures["srv_load_scrape_failures"],
    )
    return evaluate(inputs, gates)


def prompt_columns(cell: Cell, corpus: Corpus, plan: Schedule, reuse: Reuse) -> dict[str, Any]:
    """What the cell sent: where its prompts came from, and how often this launch had been sent them."""
    return {
        # Measured requests whose prompt this engine had been sent before (0 unless load.allow_repeats).
        "prompts_repeated": reuse.total,
        **reuse.as_columns(),
        "prompt_seed": prompt_seed(cell.load.seed, cell.repeat),
        "prompts_distinct_available": corpus.distinct_count,
        "corpus_sha256": corpus.sha256,  # the bytes this cell's prompts came from
        # What the engine was sent, by content hash, so a reader can check the reuse counts.
        "warmup_prompt_hashes": json.dumps([p.content_hash for p in plan.warmup]),
        "measured_prompt_hashes": json.dumps([p.content_hash for p in plan.measured]),
        # Rows of a bring-your-own trace left out (corpus.skip_bad_rows): never a silent drop.
        "corpus_skipped_rows": corpus.skipped_rows,
        "corpus_skip_reasons": "; ".join(corpus.skip_reasons) or None,
    }

"""The record types the store writes, which the workers fill: one measured request, one probe row,
one cell summary.

They live here, not in workers/, so the store names what it writes without importing the
layer above it (data flows workers -> store); workers.load re-exports them where they are made.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, fields
from typing import Any


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


@dataclass(frozen=True)
class CellSummary:
    """One row of a cell attempt's summary.parquet, its columns in the order they are written.

    Built once per ok attempt (workers/summary.py: summary_row) from the columns each part of
    the workers computes; a column missing or unknown there is a TypeError, not a silent gap.
    The writer adds schema_version, session_id and attempt_id before them (cell_key takes its
    place among those tags). A column is written with the Arrow type of its value (null where
    the value is None, as in every row of a column no cell filled).
    """

    # The measured requests and their steady-state window (workers/summary.py: summarize).
    n_requests: int
    n_ok: int
    n_errors: int
    output_tokens: int
    output_tok_per_s: float | None
    bench_output_tok_per_s: float | None
    window_start_ns: int | None
    window_end_ns: int | None
    window_s: float | None
    window_requests_completed: int
    window_mean_in_flight: float | None
    # The server's load gauges inside the window (workers/signals/server_load.py).
    srv_load_samples: int
    srv_load_scrape_failures: int
    srv_running_mean: float | None
    srv_running_min: float | None
    srv_waiting_max: float | None
    # The longest stall inside the window and its limit (workers/signals/stall.py).
    stall_max_s: float | None
    stall_start_ns: int | None
    stall_itl_ms_p99: float | None
    stall_limit_s: float | None
    streamed_output_tokens: int
    stream_usage_mismatches: int
    requests_without_token_ids: int
    chunk_tokens_exact: bool
    ttft_ms_p50: float | None
    tpot_ms_p50: float | None
    chunk_gap_ms_p50: float | None
    tokens_per_chunk: float | None
    acceptance_rate: float | None
    draft_tokens_per_draft: float | None
    client_cpu_s: float
    client_cpu_share: float
    loop_lag_p99_ms: float
    # The server's counter deltas over the measured load (workers/signals/counters.py).
    srv_generation_tokens: float
    srv_prompt_tokens: float
    srv_requests_succeeded: float
    srv_preemptions: float
    srv_spec_drafts: float
    srv_spec_draft_tokens: float
    srv_spec_accepted_tokens: float
    srv_prefix_cache_hits: float
    srv_prefix_cache_queries: float
    srv_spec_accepted_per_pos: list[float]
    # The validity gates' verdict (workers/signals/gates.py).
    gate_window: bool
    gate_requests: bool
    gate_no_errors: bool
    gate_concurrency_held: bool
    gate_client_cpu: bool
    gate_loop_lag: bool
    gate_tokens_reconciled: bool
    gate_stream_tokens: bool
    gate_engine_not_starved: bool
    gate_no_stall: bool
    concurrency_held: float
    token_mismatch: float | None
    valid: bool
    invalid_reasons: str | None
    # The host: CPU sets and scheduler counters per process group (workers/signals/host.py).
    host_cpus: int | None
    host_loadavg_1m: float
    cpus_shared_engine_client: int
    cpus_api_server: str | None
    sched_api_server_cpu_s: float | None
    sched_api_server_cpu_share: float | None
    sched_api_server_run_wait_s: float | None
    sched_api_server_wait_share: float | None
    sched_api_server_nvcsw_per_s: float | None
    sched_api_server_nivcsw_per_s: float | None
    cpus_engine_core: str | None
    sched_engine_core_cpu_s: float | None
    sched_engine_core_cpu_share: float | None
    sched_engine_core_run_wait_s: float | None
    sched_engine_core_wait_share: float | None
    sched_engine_core_nvcsw_per_s: float | None
    sched_engine_core_nivcsw_per_s: float | None
    cpus_core_only: str | None
    sched_core_only_cpu_s: float | None
    sched_core_only_cpu_share: float | None
    sched_core_only_run_wait_s: float | None
    sched_core_only_wait_share: float | None
    sched_core_only_nvcsw_per_s: float | None
    sched_core_only_nivcsw_per_s: float | None
    cpus_workers: str | None
    sched_workers_cpu_s: float | None
    sched_workers_cpu_share: float | None
    sched_workers_run_wait_s: float | None
    sched_workers_wait_share: float | None
    sched_workers_nvcsw_per_s: float | None
    sched_workers_nivcsw_per_s: float | None
    cpus_client: str | None
    sched_client_cpu_s: float | None
    sched_client_cpu_share: float | None
    sched_client_run_wait_s: float | None
    sched_client_wait_share: float | None
    sched_client_nvcsw_per_s: float | None
    sched_client_nivcsw_per_s: float | None
    engine_wait_share: float | None
    cpus_pinned: bool
    cpus_pin_note: str | None
    # The prompts: what was sent and how often this launch had been sent it before (workers/load/prompts.py).
    prompts_repeated: int
    prompts_reused: int
    prompts_reused_warmup: int
    prompts_reused_in_cell: int
    prompts_reused_earlier_corpus: int
    prompts_reused_earlier_repeat: int
    prompt_seed: int
    prompts_distinct_available: int
    corpus_sha256: str
    warmup_prompt_hashes: str  # JSON list of content hashes
    measured_prompt_hashes: str  # JSON list of content hashes
    corpus_skipped_rows: int
    corpus_skip_reasons: str | None
    # GPU telemetry over the measured load (workers/signals/gpu_telemetry.py); None without NVML.
    gpu_util_pct_mean: float | None
    gpu_sm_clock_mhz_mean: float | None
    gpu_power_w_mean: float | None
    gpu_energy_j: float | None
    gpu_joules_per_output_token: float | None
    gpu_throttle_reasons: int | None
    # CUDA-graph modes of the cell's steps (workers/signals/cudagraph_log.py); None without tables.
    cudagraph_full_steps: int | None
    cudagraph_piecewise_steps: int | None
    cudagraph_none_steps: int | None
    cudagraph_full_share: float | None
    # The lever plugin's own counters inside the measured load (workers/engine/reset.py).
    hook_steps: int | None
    hook_drafts: int | None
    hook_draft_tokens: int | None
    hook_padded_tokens: int | None
    hook_truncated_tokens: int | None
    hook_padded_share: float | None
    # dynk's choices of K (workers/signals/dynk_log.py); None for other levers.
    dynk_steps_by_k_json: str | None
    dynk_drafts_by_k_json: str | None
    dynk_graph_steps_by_k_json: str | None
    dynk_full_step_share: float | None
    dynk_counts_exact: bool | None
    # The logprob probe after the measurement (workers/load/probe.py).
    probe_prompt_hashes: str  # JSON list of content hashes
    probe_prompts: int
    probe_positions: int
    probe_error: str | None
    # Wall time of the cell's phases (workers/phases.py).
    phase_warmup_s: float
    phase_settle_s: float
    phase_measure_s: float
    phase_drain_s: float
    phase_probe_s: float
    phase_cell_s: float
    # The cell (vocab/cells.py: Cell.as_record).
    cell_key: str
    engine_key: str
    model: str
    lever: str
    k: int
    corpus: str
    repeat: int
    anchor: str | None
    replicate: bool
    concurrency: int
    max_tokens: int
    config_json: str
    # The engine it ran on and where.
    engine_ready_s: float
    engine_version: str | None
    host: str
    node_id: str | None
    cuda_visible_devices: str | None
    # What the launch had been through before the cell (workers/launch.py: ready_for_cell).
    engine_earlier_corpora: str | None
    engine_cell_index: int
    engine_start_share_s: float
    gpus: int
    suffix_cache_fresh: bool | None
    suffix_cache_settings: str | None
    engine_reset: bool | None
    engine_reset_s: float | None
    engine_reset_found_json: str | None
    engine_reset_left_json: str | None
    engine_reset_problem: str | None
    draft_hook: str | None
    engine_relaunched: bool | None
    engine_shared: bool
    engine_levers: str
    block: int | None
    engine_launch_id: str
    # What the engine's log says it ran with (workers/engine/log.py).
    engine_log_version: str | None
    engine_async_scheduling: bool | None
    engine_model_runner: str | None
    engine_cudagraph_mode: str | None
    engine_max_capture_size: int | None
    engine_nvfp4_kernel: str | None

    def columns(self) -> dict[str, Any]:
        """The row as the writer takes it: column name -> value, in the order of the fields."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

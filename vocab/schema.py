"""Structured config schemas: the shape of every YAML file under conf/.

YAML files carry values only; these dataclasses say which keys exist and their
types, so a typo in a file or an override fails at compose time (OmegaConf
struct mode), not two hours into a run.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

# omegaconf.MISSING is this string; spelled here so that importing the schemas (every worker
# does, for LoadSpec and the specs) loads neither omegaconf nor hydra (~16 MB of RSS).
MISSING = "???"

# Field metadata that grid/config/compose.py (check_values) walks before anything is launched, so each
# field's allowed values are stated once, beside the field, and every command checks them the same
# way: RANGE on every numeric field (tests/unit/vocab/test_schema_ranges.py fails on one without),
# CHOICES on fields that take one of a few words, NONEMPTY on paths ("" would mean the checkout).
RANGE = "range"
CHOICES = "choices"
NONEMPTY = "nonempty"


@dataclass(frozen=True)
class Range:
    """The allowed values of a numeric field, or of each number in its list or dict; None = unbounded.

    Every bound also excludes nan and the infinities: no setting here means "forever".
    """

    lo: float | None = None
    hi: float | None = None
    # True: the bound itself is out (`> 0` rather than `>= 0`).
    lo_open: bool = False
    hi_open: bool = False
    # Why the range is what it is, quoted in the error.
    why: str = ""

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return self.hi is None or (value < self.hi if self.hi_open else value <= self.hi)

    def text(self) -> str:
        """`>= 1`, `> 0 and <= 1`: as the error says it."""
        bounds = []
        if self.lo is not None:
            bounds.append(f"{'>' if self.lo_open else '>='} {number_text(self.lo)}")
        if self.hi is not None:
            bounds.append(f"{'<' if self.hi_open else '<='} {number_text(self.hi)}")
        return " and ".join(bounds) or "a finite number"


def number_text(value: float) -> str:
    """1 for 1.0, 0.5 for 0.5, 4,096 for 4096: a bound as a user would type it."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def ranged(
    default: float | None,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    why: str = "",
) -> Any:
    """A numeric field with its range (a list or dict of numbers: field(metadata=within(...)))."""
    return field(default=default, metadata=within(lo, hi, lo_open=lo_open, hi_open=hi_open, why=why))


def within(
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    why: str = "",
) -> dict[str, Range]:
    """The metadata that gives a field its Range."""
    return {RANGE: Range(lo, hi, lo_open, hi_open, why)}


def one_of(default: str | None, *choices: str) -> Any:
    """A field that takes one of `choices` (None too where its type allows it)."""
    return field(default=default, metadata={CHOICES: choices})


def nonempty(default: str) -> Any:
    """A path or name that may not be empty: `paths.store=` would put the store in the checkout."""
    return field(default=default, metadata={NONEMPTY: True})


# The client opens one socket per request in flight, all in one Python process at ~10 us of CPU per
# streamed chunk (README, `make bench`): about 100,000 chunks/s. At a 3 ms decode step (van on the
# H200) 4,096 streams would bring ~1.4 M chunks/s, 14x what it can read, so the client-CPU gate
# fails long before; and the default limit on open files (1,024 per process) is below it on most
# hosts. Past this a "concurrency" is a typo (99999999999999999999), not a load.
MAX_CONCURRENCY = 4096
K_WHY = "K is the number of draft tokens per step: K must be positive"
# vLLM's --dtype choices.
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
# workers/load/traces.py FORMATS (the schema cannot import workers; tests/unit/vocab checks they agree).
CORPUS_FORMATS = ("auto", "jsonl", "json", "parquet", "hf_disk")


@dataclass
class ModelSpec:
    """One model: where its weights are and how it is served."""

    # The model's name in the grid (grid.models) and in every cell's label; equals its file's name.
    name: str = MISSING
    # Local path or hub id of the weights; this project downloads none.
    path: str = nonempty(MISSING)
    # Tokenizer path when it differs from `path` (e.g. dummy-weight models).
    tokenizer: str | None = None
    # Parameters in billions, for tables and the plan; 0: not stated.
    params_b: float = ranged(0.0, lo=0)
    # Weights' dtype as vLLM's --dtype takes it (engine.dtype, when set, overrides it).
    dtype: str = one_of("auto", *DTYPES)
    # Whether the model is a mixture of experts (recorded with its cells; see active_params_b).
    moe: bool = False
    # Tensor-parallel degree: GPUs per engine (1 on CPU).
    tp: int = ranged(1, lo=1, why="tp is the GPUs one engine spans")
    # Path or id of an NVFP4 checkpoint for the w4a4 lever; None = no variant.
    quantized_variant: str | None = None
    # Name under which the server exposes the model (`--served-model-name`).
    served_name: str | None = None
    # Active parameters per token (MoE); equals params_b for dense models.
    active_params_b: float | None = ranged(None, lo=0)
    # Expected output tok/s at the study's load, for `plan`'s cost model only.
    expected_tok_per_s: float | None = ranged(None, lo=0, lo_open=True, why="plan divides by it")
    # Arguments added to `vllm serve` for this model only.
    extra_args: list[str] = field(default_factory=list)


@dataclass
class LeverSpec:
    """One lever: the engine arguments and environment it adds to a launch."""

    # The lever's name in the grid (grid.levers) and in every cell's label; equals its file's name.
    name: str = MISSING
    # One line on what the lever does, for tables and the report.
    description: str = ""
    # Speculative method (vLLM `speculative_config.method`), None = no drafts.
    spec_method: str | None = None
    # K values this lever is swept over; empty for levers without a K.
    ks: list[int] = field(default_factory=list, metadata=within(lo=1, why=K_WHY))
    # K values a runtime controller picks from (dynk); the launch uses max(K).
    dynamic_ks: list[int] = field(default_factory=list, metadata=within(lo=1, why=K_WHY))
    # Serve the model's quantised variant (ModelSpec.quantized_variant).
    quantized: bool = False
    # Entry-point name in `vllm.general_plugins` this lever needs loaded.
    requires_plugin: str | None = None
    # True/False pins `--async-scheduling`/`--no-async-scheduling`; None = vLLM's default.
    async_scheduling: bool | None = None
    # Merged into `--compilation-config` (e.g. cudagraph_mode).
    compilation: dict[str, Any] = field(default_factory=dict)
    # Merged into `--speculative-config` besides method and K.
    speculative_extra: dict[str, Any] = field(default_factory=dict)
    # Arguments added to `vllm serve` for this lever only.
    extra_args: list[str] = field(default_factory=list)
    # Environment variables set for the engine process of this lever.
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class CorpusSpec:
    """One prompt corpus: a JSONL file of prompts built by `python -m assets`."""

    # The corpus's name in the grid (grid.corpora) and in every cell's label.
    name: str = MISSING
    # `chat` sends messages to /v1/chat/completions; `completions` a raw prompt.
    endpoint: str = one_of("chat", "chat", "completions")
    # Where the prompts come from (a dataset or a URL), for the corpus table.
    source: str = ""
    # The prompts' licence, shown by `python -m grid corpus`.
    license: str = ""
    # The prompts: a file (JSONL, Parquet) or a folder written by Hugging Face `save_to_disk`;
    # relative paths resolve against `paths.data_dir`.
    path: str = nonempty(MISSING)
    # auto (from the path: folder = hf_disk, .parquet = parquet, else jsonl),
    # jsonl, parquet or hf_disk. Row shapes: workers/load/traces.py.
    format: str = one_of("auto", *CORPUS_FORMATS)
    # Leave out rows that cannot be read and count them in the results,
    # instead of failing on the first one.
    skip_bad_rows: bool = False


@dataclass
class LoadSpec:
    """How the client drives the engine for one cell."""

    # Requests the client keeps in flight at once (closed loop).
    concurrency: int = ranged(
        32,
        lo=1,
        hi=MAX_CONCURRENCY,
        why="one socket per request in flight, all in one client process: see MAX_CONCURRENCY",
    )
    # Most output tokens per request (the request's max_tokens).
    max_tokens: int = ranged(8192, lo=1)
    # Prompts per measured run, distinct and new to the engine: a corpus with
    # fewer than warmup_requests + num_prompts distinct prompts stops the run
    # before launch (see allow_repeats; grid.num_prompts sizes it per corpus).
    num_prompts: int = ranged(256, lo=1)
    # Requests sent before the measured ones, to warm the engine; never measured.
    warmup_requests: int = ranged(32, lo=0)
    # Run the warm-up requests to max_tokens (sent with `ignore_eos`), so warmup_requests = 2 x
    # concurrency is two full waves, the warm-up vLLM's perf CI uses at the measured concurrency
    # (issue 44). Pinned and warmed up so, suffix's launch sd by `vllm bench serve` read 4.4 % against
    # 18.7 % unpinned with 32 requests stopping at EOS (one H100, 3 launches each: the two knobs
    # together, docs/benchmarks/2026-12-07-h100-suffix-launch-noise.md). Off: the warm-up stops at EOS.
    warmup_ignore_eos: bool = False
    # Sampling temperature of every request (0: greedy, which the equivalence gate compares).
    temperature: float = ranged(
        0.0, lo=0, why="vLLM answers a negative temperature with HTTP 400, so every request would fail"
    )
    # Seed of the measured prompts' draw and order (each repeat draws from it and its repeat number).
    seed: int = ranged(0, lo=0, hi=2**31 - 1, why="stored with every cell in an integer column")
    # Sent as `ignore_eos`, so every request generates exactly max_tokens.
    ignore_eos: bool = False
    # Measure even when prompts repeat (a corpus too small, repeats on one
    # engine): the order cycles and each cell records how many measured
    # requests reused a prompt its engine had served (prompts_reused*). Not in
    # the cell key: where nothing repeats, the measurement is the same either way.
    allow_repeats: bool = False
    # Seconds one request may take before it counts as failed.
    request_timeout_s: float = ranged(600.0, lo=0, lo_open=True)
    # Ask vLLM for each chunk's token ids (`return_token_ids`), so tokens in
    # the window are counted exactly even when one chunk carries several.
    token_ids: bool = True
    # After a loop turn that read any socket, hold the loop this many ms so the
    # rest of a decode step's chunks arrive and are read in one turn (0: read on
    # every wake-up); idle turns hold nothing. Chunk timestamps are late by up
    # to this interval. Chosen by `make bench` (paced stand-in, one chunk per
    # stream every 5 ms, c=32, 320 x 1,024 tokens, median of 3, one run on a
    # shared 2-core machine, 2026-12-01): CPU per chunk 11.96 us at 1 ms, 13.31
    # at 0 (vllm bench serve: 29.79 us); benchmarks/client_overhead.py RECORDED.
    read_batch_ms: float = ranged(
        1.0, lo=0, hi=1000, why="every chunk's timestamp is late by up to this; 0 reads on every wake-up"
    )
    # Keep the client off the engine's cores (workers/signals/host.py, issue 27): auto pins
    # the engine's process tree and the client to disjoint CPU sets where the node
    # has >= 4 usable cores (the client takes the last core, two from 16 cores, with
    # their SMT siblings; the engine every other); off pins nothing. The sets are
    # recorded with every cell either way. Not in the cell key (vocab/cells.py).
    pin_cpus: str = one_of("auto", "off", "auto")


@dataclass
class EngineConfig:
    """How to start `vllm serve`; the command is a value so clusters can bring their own vLLM."""

    # argv prefix before the model path, e.g. [vllm, serve] on GPU machines.
    command: list[str] = field(default_factory=lambda: ["vllm", "serve"])
    # Environment of every engine process; values may use {python} and {prefix} (the harness's
    # sys.executable / sys.prefix).
    env: dict[str, str] = field(default_factory=dict)
    # Overrides every model's dtype when set (the CPU engine is slow in bf16
    # on processors without AVX512-BF16).
    dtype: str | None = one_of(None, *DTYPES)
    # Pass --enforce-eager: no CUDA graphs (the CPU engine, debugging).
    enforce_eager: bool = False
    # vLLM's --gpu-memory-utilization; None leaves vLLM's default.
    gpu_memory_utilization: float | None = ranged(
        0.85, lo=0, hi=1, lo_open=True, why="the share of each GPU's memory vLLM may take"
    )
    # vLLM's --max-model-len: prompt plus output tokens per request at most.
    max_model_len: int = ranged(16384, lo=1)
    # vLLM's --max-num-seqs; None leaves vLLM's default.
    max_num_seqs: int | None = ranged(None, lo=1)
    # Decode batch size that FULL CUDA graphs must cover under speculative
    # decoding: capture size >= (1+K) x this (usually the load's concurrency).
    cudagraph_concurrency: int = ranged(32, lo=1)
    # Every drafting lever's capture ceiling is at least this: vLLM's own default
    # (512 on Hopper; 1024 on Blackwell, set it there), so levers compared at one
    # K launch with the same ceiling and none loses graphs vLLM would have captured.
    cudagraph_capture_floor: int = ranged(512, lo=0)
    # Seconds the engine may take to answer /health before its launch counts as failed.
    start_timeout_s: float = ranged(900.0, lo=0, lo_open=True)
    # Seconds the engine's process group gets to exit after SIGTERM before SIGKILL.
    stop_timeout_s: float = ranged(30.0, lo=0, lo_open=True)
    # Arguments added to every `vllm serve` of the grid.
    extra_args: list[str] = field(default_factory=list)
    # Site-wide `--compilation-config` settings, merged under each lever's own
    # (the lever wins on a clash), e.g. a fusion this cluster's interconnect
    # cannot run (conf/experiment/gpu_validate.yaml turns off FlashInfer's
    # all-reduce fusion, which needs NVSwitch multicast).
    compilation: dict[str, Any] = field(default_factory=dict)


@dataclass
class AnchorSpec:
    """The cell every session runs at its start, at its end and (runs > 2) evenly in between: the
    trend of its runs across the session is the session's drift band (analysis/drift.py)."""

    # Run the anchor cell (false: no drift band, so no decision can be made).
    enabled: bool = True
    # The anchor's model; None: the grid's first model.
    model: str | None = None
    # The anchor's lever.
    lever: str = "van"
    # The anchor's corpus; None: the grid's first corpus.
    corpus: str | None = None
    # Anchor runs per session, each on an engine launch of its own: 2 (start, end) cannot tell
    # drift from launch noise, so the band is their difference; >= 3 fit a trend with an interval.
    runs: int = ranged(2, lo=2, why="a start and an end run")


@dataclass
class ConfirmSpec:
    """The held-out confirmation a run ends with (grid/orchestrate/confirm.py, analysis/confirmation.py)."""

    # After a `grid run` with nothing left failed: measure each model's final configuration and van
    # again in a fresh session on a new prompt seed, so Table 1 has a figure free of the selection.
    enabled: bool = False
    # The confirmation's load.seed is the run's + this: no repeat of the selection (seed + r, r <
    # seed_step) draws the same prompt order, and the cells get keys of their own.
    seed_step: int = ranged(1000, lo=1)
    # grid.repeats of the confirmation; None: the grid's own.
    repeats: int | None = ranged(None, lo=2, why="the confirmation's interval needs 2 repeats a side")


@dataclass
class SequentialSpec:
    """Repeats only where needed (analysis/sequential.py; grid/orchestrate/sequential.py runs the looks)."""

    # Instead of grid.repeats: measure every comparison at the first look, then add repeats look by
    # look only to comparisons of a lever with van whose interval still straddles the drift band.
    enabled: bool = False
    # Cumulative repeats at each look; the last is the cap. Each look after the first is a session of
    # its own (a `grid run`); every look is judged at Pocock's corrected confidence.
    looks: list[int] = field(default_factory=lambda: [3, 5, 8, 12], metadata=within(lo=2))
    # Also stop once the interval rules out a gain this large (0: only the band's own futility stop).
    min_gain: float = ranged(0.0, lo=0, hi=1)


@dataclass
class GridSpec:
    """The grid: every combination of these names is a cell."""

    # Model names (conf/model/<name>.yaml or +model.<name>...): one axis of the grid.
    models: list[str] = field(default_factory=list)
    # Corpus names (conf/corpus/<name>.yaml or +corpus.<name>.path=...): one axis of the grid.
    corpora: list[str] = field(default_factory=list)
    # Lever names (conf/lever/<name>.yaml): one axis of the grid, each at each of its K values.
    levers: list[str] = field(default_factory=list)
    # Replaces a lever's own K list, per lever: e.g. {bestkpad: [4, 8]} in YAML,
    # `+grid.ks.bestkpad=[4,8]` on the command line.
    ks: dict[str, list[int]] = field(default_factory=dict, metadata=within(lo=1, why=K_WHY))
    # Measured runs of every cell (x van is judged from 2 on).
    repeats: int = ranged(1, lo=1)
    # Measured prompts per corpus where it differs from load.num_prompts, e.g.
    # {chat_bench: 46} for a corpus too small for the study's load: every
    # measured prompt stays new to its engine. `+grid.num_prompts.summarize=100`.
    num_prompts: dict[str, int] = field(default_factory=dict, metadata=within(lo=1))
    # interleaved: each repeat is its own engine launch, levers in order on
    # even repeats and reversed on odd ones (A B C, C B A), so drift within a
    # session spreads evenly; same_engine: repeats run back to back on one launch.
    repeat_order: str = one_of("interleaved", "interleaved", "same_engine")
    # per_spec: one engine serves every corpus of its spec in turn (fewer
    # starts); per_corpus: a fresh engine per corpus; auto: per_corpus for
    # suffix-decoding levers, whose tree keeps earlier outputs (measured on the
    # CPU engine: a corpus served after another drafted with 1.7-4.5% lower
    # acceptance, benchmarks/engine_reuse.py), per_spec for the rest. Cells
    # record the corpora their engine served before them (engine_earlier_corpora).
    # shared: one launch per (model, argv) and repeat group runs every lever of
    # that argv (suffix K, bestkpad K, dynk with max K = K; van and w4a4 alone)
    # in blocks: per corpus and prompt draw, each lever once, in ABBA order,
    # the engine reset to fresh (suffix tree, draft hook, prefix cache) before
    # every cell (docs/reset.md, lever_plugins/switch.py).
    engine_reuse: str = one_of("auto", "auto", "per_spec", "per_corpus", "shared")
    # engine_reuse=shared: launches per argv, repeat r on launch r mod this; 0 = one per repeat
    # (each repeat independent, as the decision rule assumes). 1 is refused: one launch measures
    # no launch-to-launch noise.
    launches_per_argv: int = ranged(0, lo=0)
    # Corpora that always get an engine of their own, except under engine_reuse=shared (whose
    # reset makes every cell's prompts new to the engine): `mix` is drawn from the other corpora,
    # so after them on one engine its measured prompts would not be new (grid/checks/prompt_audit.py checks).
    own_engine_corpora: list[str] = field(default_factory=lambda: ["mix"])
    anchor: AnchorSpec = field(default_factory=AnchorSpec)
    confirm: ConfirmSpec = field(default_factory=ConfirmSpec)
    sequential: SequentialSpec = field(default_factory=SequentialSpec)


@dataclass
class PathsConfig:
    """Where things live; relative paths resolve against the project root."""

    # A folder, or a URL of any filesystem pyarrow opens: s3://bucket/prefix (gs://, hdfs://); store/fs.py.
    store: str = nonempty("results")
    # How to reach a URL store, never credentials (those come from the environment / AWS config):
    # e.g. {endpoint_override: "minio.local:9000", scheme: http, region: us-east-1}.
    store_options: dict[str, str] = field(default_factory=dict)
    # Scratch space on each node: corpora fetched from a URL data_dir and built before upload, engine files.
    cache_dir: str = nonempty(".cache")
    # Where `python -m assets` writes the corpora and corpus paths resolve (a folder or a URL).
    data_dir: str = nonempty(".cache/data")
    # Where `python -m assets` writes the embedded model and the dummy-weight models.
    models_dir: str = nonempty(".cache/models")
    # The user's config folders, searched before the shipped conf/ (a file there
    # with a shipped name replaces it): filled in by grid.config.compose from
    # hydra.searchpath=[file:///my/conf] and LEVER_GRID_CONF=/my/conf[:/other].
    user_conf: list[str] = field(default_factory=list)


@dataclass
class RayConfig:
    """Where the engines run and how many at once (grid/orchestrate/schedule.py)."""

    # None: the job's cluster under `ray job submit`, else a new local cluster;
    # "auto": the cluster `ray start` runs on this machine; or "host:port".
    address: str | None = None
    # CPUs reserved per engine; the CPU engine uses two cores (one compute
    # thread, one for the API server and client), so a 2-core machine runs
    # one engine at a time instead of two that slow each other down.
    cpus_per_engine: float = ranged(2.0, lo=0, lo_open=True, why="Ray would pack every engine on one core")
    # Reserve `tp` GPUs per engine; off on machines without GPUs.
    use_gpus: bool = False
    # Engine groups submitted at once; 0 = as many as the cluster could hold
    # (its GPUs, or its CPUs / cpus_per_engine without GPUs).
    max_in_flight: int = ranged(0, lo=0, why="0 means as many as the cluster holds")


@dataclass
class NodeSpec:
    """A kind of node in a cluster description used by `plan`."""

    # Nodes of this kind; 0: an entry left out (see grid/checks/preflight.py: node_problems).
    count: int = ranged(1, lo=0)
    # GPUs per node of this kind.
    gpus: int = ranged(8, lo=0)
    # CPUs per node of this kind.
    cpus: int = ranged(128, lo=0)


@dataclass
class ClusterSpec:
    """What the grid runs on; `plan` checks bundles fit and prices GPU-hours."""

    # The cluster's name, as `cluster=<name>` picks conf/cluster/<name>.yaml.
    name: str = "local"
    # The GPU model (e.g. H200), for the plan's and report's headings; None on CPU.
    gpu_type: str | None = None
    # Empty = whatever `ray.init()` finds (the local default).
    nodes: list[NodeSpec] = field(default_factory=list)


@dataclass
class PlanConfig:
    """`plan`'s cost model: engine start + prompts x output tokens / expected rate."""

    # Seconds from launch to ready, per engine, where neither the store nor engine_start_s_by_tp
    # gives one (H200 measured 50-245 s: docs/benchmarks/2026-11-30-h200-validation.md).
    engine_start_s: float = ranged(180.0, lo=0)
    # Seconds from launch to ready by tensor-parallel size (GPUs per engine), over engine_start_s:
    # `+plan.engine_start_s_by_tp.8=300`. Empty by default; the GPU hosts' cluster files fill it
    # from conf/plan/start_by_tp.yaml, which says which figures were measured and which assumed.
    engine_start_s_by_tp: dict[int, float] = field(default_factory=dict, metadata=within(lo=0))
    # Mean output tokens per request as a fraction of max_tokens.
    output_fill: float = ranged(0.5, lo=0, hi=1, lo_open=True, why="a fraction of load.max_tokens")
    # Per-model override of ModelSpec.expected_tok_per_s: `+plan.rates.tiny=30`.
    rates: dict[str, float] = field(
        default_factory=dict, metadata=within(lo=0, lo_open=True, why="plan divides by it")
    )
    # Used when a model states no rate.
    default_tok_per_s: float = ranged(1000.0, lo=0, lo_open=True, why="plan divides by it")
    # Take each model's engine start and rate from the store's VALID cells where it has measured
    # them (grid/plan/store_costs.py fills the two tables below): `plan.from_store=false` uses the
    # figures above only. plan.rates still wins over a measured rate.
    from_store: bool = True
    # Seconds from launch to ready per model, measured in the store (filled by plan.from_store).
    # The start's precedence (grid/plan/cost.py start_for): this > measured_start_s_by_tp >
    # engine_start_s_by_tp > engine_start_s.
    measured_start_s: dict[str, float] = field(default_factory=dict, metadata=within(lo=0))
    # Seconds from launch to ready per tensor-parallel size, the median of the store's VALID cells
    # by their `gpus` (filled by plan.from_store); prices a model the store has not run yet.
    measured_start_s_by_tp: dict[int, float] = field(default_factory=dict, metadata=within(lo=0))
    # Output tok/s per model, measured in the store's VALID cells (filled by plan.from_store).
    measured_rates: dict[str, float] = field(
        default_factory=dict, metadata=within(lo=0, lo_open=True, why="plan divides by it")
    )


@dataclass
class EquivalenceConfig:
    """Thresholds of the output-equivalence gate (analysis/equivalence.py)."""

    # judge's unpaired rule with a floor (analysis/equivalence.py), which the
    # grid no longer uses: exact-match rate against van at most this much below
    # van's against itself. Absence of evidence; the paired gate below decides.
    max_exact_match_drop: float = ranged(0.05, 0, 1)
    # Without a second van run to measure the floor: the exact-match rate a
    # lever needs (1.0: float32 on the CPU is deterministic).
    min_exact_match_without_floor: float = ranged(1.0, 0, 1)
    # Add, per model x corpus, a second greedy van run of the same prompts on a
    # fresh engine (a `replicate` cell) wherever a lever is judged by exact
    # match: the paired test's noise floor. Its cost shows in `plan`.
    van_replicate: bool = True
    # Add the replicate even where no lever of this grid is judged by exact
    # match: a grid of van alone whose levers come later (experiments/tune.py's
    # van stage; each later stage's lever is judged against this van run).
    van_replicate_always: bool = False
    # The paired non-inferiority gate (analysis/equivalence.py: judge_paired):
    # a lossless lever passes only when the upper one-sided (1 - alpha) bound on
    # d = (share of prompts whose output the lever changed) - (share van's
    # replicate changed) lies below the margin: this (0.10: ten points), widened
    # where the prompts are too few for a lever identical to van to pass
    # identical_pass_rate of the time at the replicate's own changed share
    # (applied_margin; 36 points at 46 prompts on a floor changing half of
    # outputs, 19 at 160, ten from ~550). Why ten at most: on an H200 van's own
    # rerun changes 32-65% of greedy bf16 outputs over 1,024 tokens, and that
    # share moves by about ten points from run to run on the same corpus; a
    # lever within ten points of its session's floor changes outputs no more
    # than rerunning van does. A lever at the margin applied passes at most
    # alpha of the time (`python -m analysis.equivalence_power`). The margin
    # excuses nothing where there is no noise: on a deterministic floor (the
    # replicate matches van everywhere, float32 on the CPU) any changed output
    # fails.
    noninferiority_margin: float = ranged(0.10, 0, 1, lo_open=True, hi_open=True)
    # Fewer prompts in common than this is no evidence either way (no_reference,
    # never a pass), with a replicate or without one (then every output must
    # match). 25: at the configured margin, prompts_needed(0 discordant, 0.10,
    # alpha 0.05), the first n at which a lever that changed nothing could clear
    # ten points; cpu_small sends 25.
    min_prompts: int = ranged(25, 1)
    # One-sided: the bound is a (1 - alpha) upper confidence bound (Tango's score).
    # 0.04, not 0.05: the score bound's coverage is approximate, and at 0.05 a
    # lever at the margin was caught 94.7-95.2% of the time on noisy floors
    # (20,000 draws each, analysis/equivalence_power.py); at 0.04 >= 95%.
    alpha: float = ranged(0.04, 0, 1, lo_open=True, hi_open=True)
    # How often a lever identical to van must pass: where the prompts are too few
    # or the engine too noisy for that at the margin above, the gate widens the
    # margin to where it holds (equivalence.applied_margin, from van's replicate's
    # own changed share); a lever at the widened margin still fails >= 1 - alpha.
    # At 46 prompts on a floor changing half of outputs that is 35 points, 19 at
    # 160, 10.4 at 512 (`python -m analysis.equivalence_power` prints them).
    identical_pass_rate: float = ranged(0.95, 0.5, 1, hi_open=True)
    # Judge the warm-up's outputs too: every lever of a repeat warms up on the same
    # prompts (disjoint from the measured ones), greedy, so they are evidence the
    # cell already paid for. At the study's load (64 warm-up requests) the gate
    # then decides on 110 prompts of chat_bench instead of 46 and 345 of summarize
    # instead of 281, which analysis.equivalence_power.gate_prompts asks for;
    # no request more is sent. Cells stored before 2026-12-07 hold no warm-up rows.
    judge_warmup: bool = True
    # Logprob probe (workers/load/probe.py): after its measured requests, each cell
    # scores the text of this many corpus prompts with top-k prompt logprobs
    # (0: off). Not part of the measurement; it feeds the gate for quantised
    # levers, which cannot match van token for token.
    probe_prompts: int = ranged(16, 0)
    # Top-k prompt logprobs the probe asks for per token.
    probe_top_k: int = ranged(5, 1, 20, why="vLLM's default limit on logprobs is 20")
    # Quantised levers pass when both hold against van on the probe text: top-k agreement at least
    # this, and mean KL at most max_kl_nats.
    # Starting points, not yet calibrated on a real W4A4 checkpoint: compare
    # with van against itself (noise_floor_kl_nats in the verdicts).
    min_topk_agreement: float = ranged(0.9, 0, 1)
    # Largest mean KL divergence (nats) from van on the probe text a quantised lever may have.
    max_kl_nats: float = ranged(0.1, 0)


@dataclass
class GateConfig:
    """Thresholds of the validity gates (workers/signals/gates.py); a cell is VALID iff all pass."""

    # Shortest steady-state window (all `concurrency` requests streaming) a VALID cell has.
    min_window_s: float = ranged(30.0, lo=0)
    # Fewest requests completed inside the window for a VALID cell.
    min_requests: int = ranged(32, lo=0)
    # Time-weighted mean in-flight / target concurrency, inside the window.
    min_concurrency_held: float = ranged(0.95, lo=0, hi=1, why="a share of the target concurrency")
    # Client CPU seconds / wall seconds of the measured phase (above 1 with threads).
    max_client_cpu_share: float = ranged(0.5, lo=0)
    # 99th percentile of the event loop's wake-up delay while measuring.
    max_loop_lag_ms: float = ranged(20.0, lo=0)
    # Engine host-thread starvation over the measured load (workers/signals/host.py): of
    # the time EngineCore's (and its workers') threads were runnable, the share
    # they waited in the run queue (/proc/<pid>/task/*/schedstat). Measured
    # (docs/benchmarks/2026-12-03-cpu-crosscheck.md): the 2-core CPU engine with no
    # neighbour 0.099-0.118 (4 cells), with one or two busy neighbour sessions on its
    # cores at its own priority 0.40-0.48 (4 cells); a busy EngineCore on the H200
    # ~0.0003 (<= 1.5 ms per ~6 s window, 2026-12-02).
    max_engine_wait_share: float = ranged(0.25, lo=0, hi=1, why="a share of runnable time")
    # Largest |client - server| / server output tokens in the window.
    max_token_mismatch: float = ranged(0.01, lo=0)
    # Engine stall (workers/signals/stall.py): the longest stretch of the steady-state window
    # with no token on any stream (the client's own chunk stamps, which never time out) and no
    # engine step (its token counters rising between two /metrics answers <= 1.5 s apart) must
    # stay under max(stall_floor_s, stall_itl_multiple x the window's p99 gap between a stream's
    # chunks, the stall's own gaps left out). An engine stopped 40 s (SIGSTOP) gave a VALID cell
    # before this gate (issue 45). The floor is for fast engines: an H200 steps in 3-17 ms, so
    # 2 s is >100 steps that never came. The multiple is for slow ones, whose normal gaps are
    # long (a CPU engine's prefill steps of up to ~1 s): 10 x their p99 is not a slow step.
    stall_floor_s: float = ranged(2.0, lo=0, lo_open=True)
    # A stall must stay under this many times the window's inter-token p99 (see stall_floor_s).
    stall_itl_multiple: float = ranged(10.0, lo=1)
    equivalence: EquivalenceConfig = field(default_factory=EquivalenceConfig)


@dataclass
class RunConfig:
    """What `run` does with cells the store already has."""

    # resume: cells without an ok result; failed: only cells whose attempts failed; all: every cell.
    mode: str = one_of("resume", "resume", "failed", "all")
    # Cell keys or labels (prefixes) to run whatever the store says.
    force: list[str] = field(default_factory=list)
    # Attempts per cell within one run (the driver retries, never Ray).
    max_attempts: int = ranged(2, lo=1)
    # A cell measured INVALID (a validity gate failed) runs again on resume;
    # true keeps it as measured.
    keep_invalid: bool = False
    # Reruns of a cell INVALID on resume at most (keep_invalid=false): a cell INVALID for a
    # structural reason (a corpus too small to fill the steady window: chat_bench on the H200, 2026-12-01)
    # stays INVALID however often it runs. After that it is kept, and named.
    invalid_reruns: int = ranged(1, lo=0)
    # Within one run, a cell INVALID only because the host was busy (its engine starved of cores,
    # the client's event loop lagging: workers/signals/gates.py HOST_GATES) is measured again at once
    # on a fresh engine, at most this many times, before it is left INVALID; 0 (or keep_invalid): never.
    host_invalid_reruns: int = ranged(1, lo=0)
    # Room the store must have before each engine start (store/space.py); a store
    # with less, or one that cannot be written, stops the run before the engine starts.
    min_store_free_mb: int = ranged(256, lo=0, why="0 checks only that the store can be written")
    # Several drivers, one store (grid/orchestrate/lease.py): a driver leases each cell before its engine
    # starts and renews the lease every third of this; a killed driver's leases expire after it.
    lease_s: float = ranged(
        120.0,
        lo=0,
        lo_open=True,
        why="a lease of 0 s has expired when written: every driver would take every cell",
    )


@dataclass
class Config:
    """One experiment's whole config, as conf/config.yaml and the overrides compose it."""

    # The experiment's name: its report, its status scope and its confirmation record go by it.
    name: str = "unnamed"
    grid: GridSpec = field(default_factory=GridSpec)
    engine: EngineConfig = field(default_factory=EngineConfig)
    load: LoadSpec = field(default_factory=LoadSpec)
    paths: PathsConfig = field(default_factory=PathsConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    plan: PlanConfig = field(default_factory=PlanConfig)
    run: RunConfig = field(default_factory=RunConfig)
    gates: GateConfig = field(default_factory=GateConfig)
    # Tag every stored row with this; None = a fresh id per launch.
    session_id: str | None = None
    # Specs given in the run config, by name: fields merged over conf/<group>/<name>.yaml,
    # or a whole spec where there is no such file; checked against ModelSpec, LeverSpec,
    # CorpusSpec (grid/config/catalog.py). `+corpus.code_complete.skip_bad_rows=true`,
    # `+corpus.mytrace.path=/data/trace.jsonl`, `+model.deepseek_r1.tp=16`.
    model: dict[str, Any] = field(default_factory=dict)
    lever: dict[str, Any] = field(default_factory=dict)
    corpus: dict[str, Any] = field(default_factory=dict)


@functools.cache
def register() -> None:
    """Register the schemas so Hydra validates conf/ against them (once a process: Hydra's store
    outlives a compose, and storing builds the whole schema again, ~20 ms a compose)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    # Group files (engine/, load/, cluster/) merge into Config's typed fields,
    # which validates them; only the root schema needs registering.
    cs.store(name="config_schema", node=Config)

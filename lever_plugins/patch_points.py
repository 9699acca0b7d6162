"""Every name in vLLM (and arctic-inference) the plugins rely on, in one table (issue 46 item 1).

The plugins read their patch targets from here (proposer_patch: the proposer's module,
class and the `propose` signatures it was checked against; dispatch_patch: the
dispatcher's), and `lever_plugins.patch_check` checks every row against an installed
vLLM: tests/unit/lever_plugins/test_patch_points.py against the project's own (0.32
CPU build), `make compat` against another release in a side environment
(experiments/vllm_compat.py; docs/compat.md). A row a plugin stops using, or a vLLM
attribute a plugin starts reading without a row, fails that test: the table cannot
drift from the code. Pure data: no vLLM import.

Kinds of row:
- `class`: the module defines the class;
- `method`: the class has the method; `params` (if any) lists the exact parameter-name
  tuples the plugin was checked against, `accepts` names it must take, `returns` the
  start of its return annotation;
- `attribute`: instances carry it (a `self.<name> =` in a method, a property, a
  class-level field), read from the class's source;
- `members`: the enum class has each of `accepts` as a member;
- `text`: `accepts` each occur in the source of the module (or of any module under a
  package), e.g. a route or an entry-point group name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PatchPoint:
    """One thing a plugin touches: where it is, what shape the plugin expects, and who relies on it."""

    key: str
    module: str
    qualname: str
    kind: str
    users: tuple[str, ...]
    params: tuple[tuple[str, ...], ...] = ()
    accepts: tuple[str, ...] = ()
    returns: str = ""
    why: str = ""
    # Not part of vLLM: checked against whatever version the environment holds (the same
    # arctic-inference in every column of docs/compat.md: the side environment reuses the project's).
    package: str = "vllm"

    @property
    def class_name(self) -> str:
        return self.qualname.split(".")[0]

    @property
    def member(self) -> str | None:
        """The method or attribute under the class, None for a class, members or text row."""
        return self.qualname.split(".", 1)[1] if "." in self.qualname else None


PROPOSER_MODULE = "vllm.v1.spec_decode.suffix_decoding"
PROPOSER_CLASS = "SuffixDecodingProposer"
DISPATCHER_MODULE = "vllm.v1.cudagraph_dispatcher"
DISPATCHER_CLASS = "CudagraphDispatcher"
# Known `propose` signatures: vLLM 0.26.0, 0.32.0 and 0.33.0 (docs/compat.md); about 0.11 (vllm-ascend).
PROPOSE_SIGNATURES = (
    ("self", "num_speculative_tokens", "input_batch", "sampled_token_ids", "slot_mappings"),
    ("self", "input_batch", "sampled_token_ids"),
)
V1_RUNNER = "vllm.v1.worker.gpu_model_runner"
GPU_WORKER = "vllm.v1.worker.gpu_worker"
V2_RUNNER = "vllm.v1.worker.gpu.model_runner"
# vLLM imports the cache from the package; the class lives (and is read) here.
ARCTIC_CACHE_MODULE = "arctic_inference.suffix_decoding.cache"
HOOKS = ("kpad", "dynk", "switch")
CACHE_ATTRIBUTES = (
    "max_tree_depth",
    "max_cached_requests",
    "cached_requests",
    "active_requests",
    "_global_tree",
)

POINTS: tuple[PatchPoint, ...] = (
    # The draft hook: proposer_patch wraps propose(); kpad and dynk read the proposer and its batch.
    PatchPoint("proposer", PROPOSER_MODULE, PROPOSER_CLASS, "class", (*HOOKS, "reset")),
    PatchPoint(
        "proposer.propose",
        PROPOSER_MODULE,
        f"{PROPOSER_CLASS}.propose",
        "method",
        HOOKS,
        params=PROPOSE_SIGNATURES,
        why="wrapped; input_batch and sampled_token_ids read by name",
    ),
    PatchPoint(
        "proposer.num_speculative_tokens",
        PROPOSER_MODULE,
        f"{PROPOSER_CLASS}.num_speculative_tokens",
        "attribute",
        HOOKS,
        why="K",
    ),
    PatchPoint(
        "proposer.max_model_len",
        PROPOSER_MODULE,
        f"{PROPOSER_CLASS}.max_model_len",
        "attribute",
        HOOKS,
        why="draft budget near the end",
    ),
    PatchPoint(
        "proposer.suffix_cache",
        PROPOSER_MODULE,
        f"{PROPOSER_CLASS}.suffix_cache",
        "attribute",
        ("reset",),
        why="emptied between cells",
    ),
    PatchPoint(
        "runner.builds_proposer",
        V1_RUNNER,
        "",
        "text",
        HOOKS,
        accepts=(f"{PROPOSER_CLASS}(",),
        why="the V1 runner drafts with the patched class",
    ),
    PatchPoint(
        "input_batch.req_ids",
        "vllm.v1.worker.gpu_input_batch",
        "InputBatch.req_ids",
        "attribute",
        HOOKS,
    ),
    PatchPoint(
        "input_batch.num_tokens_no_spec",
        "vllm.v1.worker.gpu_input_batch",
        "InputBatch.num_tokens_no_spec",
        "attribute",
        HOOKS,
    ),
    # dynk's CUDA-graph tally: dispatch_patch observes dispatch()'s runtime mode.
    PatchPoint(
        "dispatcher.dispatch",
        DISPATCHER_MODULE,
        f"{DISPATCHER_CLASS}.dispatch",
        "method",
        ("dynk", "switch"),
        returns="tuple[CUDAGraphMode",
        why="wrapped; result[0] read as the runtime mode",
    ),
    PatchPoint(
        "cudagraph_mode.members",
        "vllm.config.compilation",
        "CUDAGraphMode",
        "members",
        ("dynk", "switch"),
        accepts=("NONE", "PIECEWISE", "FULL"),
        why="step_tally.MODES",
    ),
    PatchPoint(
        "runner.builds_dispatcher",
        V1_RUNNER,
        "",
        "text",
        ("dynk", "switch"),
        accepts=(f"{DISPATCHER_CLASS}(",),
    ),
    # The reset extension: mixed into the worker through --worker-extension-cls, reached by dev-mode routes.
    PatchPoint(
        "parallel_config.worker_extension_cls",
        "vllm.config.parallel",
        "ParallelConfig.worker_extension_cls",
        "attribute",
        ("reset",),
        why="--worker-extension-cls",
    ),
    PatchPoint(
        "worker_base.mixes_extension",
        "vllm.v1.worker.worker_base",
        "",
        "text",
        ("reset",),
        accepts=("worker_extension_cls", "__bases__"),
        why="the extension becomes a base of the worker class",
    ),
    PatchPoint("worker.model_runner", GPU_WORKER, "Worker.model_runner", "attribute", ("reset",)),
    PatchPoint("runner.drafter", V1_RUNNER, "GPUModelRunner.drafter", "attribute", ("reset",)),
    PatchPoint(
        "runner.requests",
        V1_RUNNER,
        "GPUModelRunner.requests",
        "attribute",
        ("reset",),
        why="no reset while requests are in the runner",
    ),
    # Model Runner V2 (van and w4a4 on a GPU) keeps its requests elsewhere (reset_ext.runner_requests).
    PatchPoint("runner_v2.req_states", V2_RUNNER, "GPUModelRunner.req_states", "attribute", ("reset",)),
    PatchPoint(
        "request_states.req_id_to_index",
        "vllm.v1.worker.gpu.states",
        "RequestState.req_id_to_index",
        "attribute",
        ("reset",),
        why="no reset while requests are in a V2 runner",
    ),
    PatchPoint(
        "dev_routes",
        "vllm.entrypoints",
        "",
        "text",
        ("reset",),
        accepts=('"/collective_rpc"', '"/reset_prefix_cache"', "if envs.VLLM_SERVER_DEV_MODE:"),
        why="workers/engine/reset.py",
    ),
    # How every plugin is loaded.
    PatchPoint(
        "general_plugins",
        "vllm.plugins",
        "",
        "text",
        ("kpad", "dynk", "switch", "lifetime"),
        accepts=('"vllm.general_plugins"',),
    ),
    # arctic-inference's cache behind vLLM's suffix proposer (reset_ext.cache_state / empty_like).
    PatchPoint(
        "suffix_cache.init",
        ARCTIC_CACHE_MODULE,
        "SuffixDecodingCache.__init__",
        "method",
        ("reset",),
        accepts=("max_tree_depth", "max_cached_requests"),
        package="arctic_inference",
    ),
    *(
        PatchPoint(
            f"suffix_cache.{name}",
            ARCTIC_CACHE_MODULE,
            f"SuffixDecodingCache.{name}",
            "attribute",
            ("reset",),
            package="arctic_inference",
        )
        for name in CACHE_ATTRIBUTES
    ),
)

BY_KEY = {point.key: point for point in POINTS}

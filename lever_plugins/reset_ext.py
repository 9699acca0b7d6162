"""`reset` worker extension: return a drafting engine's worker to its just-started state between cells.

Loaded with `--worker-extension-cls lever_plugins.reset_ext.ResetExtension`
(workers/engine/args.py, every lever that drafts from the engine's history);
vLLM mixes the class into its worker class, so these methods run in each
worker process with `self` the worker. The harness calls them through
`POST /collective_rpc {"method": "lever_reset_drafter"}`, which vLLM's API
server serves only with VLLM_SERVER_DEV_MODE=1 (workers/engine/reset.py; docs/reset.md).

What is reset, with nothing in flight:
- the suffix-decoding cache (`model_runner.drafter.suffix_cache`, vLLM's
  SuffixDecodingProposer, an arctic-inference SuffixDecodingCache): replaced
  by a new, empty cache at the settings of the one it replaces;
- the decision state of an installed draft hook (dynk's acceptance estimate
  and last drafts; kpad keeps none), through the hook's `reset_decisions`,
  leaving its cumulative counters (the harness reads their deltas per window);
- on a shared launch (lever_plugins/switch.py), the draft hook the next cell
  runs: `lever_reset_drafter("kpad")` selects kpad, "dynk" dynk, "suffix" none.
An engine without a drafter (van on a shared launch) has nothing of its own
to reset: the call answers `reset: true` with no suffix cache, and the prefix
cache, reset by the harness, is its only memory of earlier cells.
vLLM's prefix cache lives in the scheduler, not the worker: the harness resets
it through `POST /reset_prefix_cache`.

Each method returns a JSON-able dict: the state it found and the state it left.
vLLM is imported only inside the methods, in the worker process.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("vllm.lever_plugins")


def cache_state(cache: Any) -> dict[str, Any]:
    """Cached and active requests and the global tree's size of a SuffixDecodingCache."""
    tree = getattr(cache, "_global_tree", None)
    return {
        "cached_requests": len(cache.cached_requests),
        "active_requests": len(cache.active_requests),
        "global_tree_seqs": int(tree.num_seqs()) if tree is not None else None,
        "global_tree_bytes": int(tree.estimate_memory()) if tree is not None else None,
        "max_tree_depth": int(cache.max_tree_depth),
        "max_cached_requests": int(cache.max_cached_requests),
    }


def hook_counters(hook: Any) -> dict[str, dict[str, int]]:
    """Cumulative counters of each draft hook in the engine (a switch's inner hooks, or the one
    installed): steps it shaped and the drafts it wrote, padded and truncated (pad_policy.PadStats)."""
    hooks = getattr(hook, "hooks", None) or ({hook.name: hook} if hook is not None else {})
    out = {}
    for name, inner in hooks.items():
        stats = getattr(inner, "stats", None)
        if stats is None:
            continue
        controller = getattr(inner, "controller", None)
        steps = controller.steps if controller is not None else getattr(inner, "steps", 0)
        out[name] = {
            "steps": int(steps),
            "drafts": int(stats.drafts),
            "draft_tokens": int(stats.draft_tokens),
            "padded_tokens": int(stats.padded_tokens),
            "truncated_tokens": int(stats.truncated_tokens),
        }
    return out


def runner_requests(runner: Any) -> int:
    """Requests in the model runner: the V1 runner's `requests`, Model Runner V2's
    `req_states.req_id_to_index` (van and w4a4 run on V2 on a GPU, vLLM 0.26-0.33: docs/compat.md);
    read by what each runner has, so a V2 runner with requests in flight is not taken for an idle one."""
    requests = getattr(runner, "requests", None)
    if requests is None:
        states = getattr(runner, "req_states", None)
        requests = getattr(states, "req_id_to_index", None)
    return len(requests or {})


def empty_like(cache: Any) -> Any:
    """A new, empty cache of the same class at the same settings."""
    return type(cache)(max_tree_depth=cache.max_tree_depth, max_cached_requests=cache.max_cached_requests)


def active_hook_name(hook: Any, drafter: Any) -> str | None:
    """Which drafts the engine serves: the switch's active hook, a fixed hook, "suffix", or None."""
    if drafter is None:
        return None
    if hook is None:
        return "suffix"
    return str(getattr(hook, "active", hook.name))


class ResetExtension:
    """Methods mixed into vLLM's worker; reached with collective_rpc by name."""

    model_runner: Any

    def lever_drafter_state(self) -> dict[str, Any]:
        """What the worker holds now: requests in the runner, the suffix cache, the draft hook."""
        runner = self.model_runner
        drafter = getattr(runner, "drafter", None)
        cache = getattr(drafter, "suffix_cache", None)
        from lever_plugins.proposer_patch import installed_hook

        hook = installed_hook() if drafter is not None else None
        return {
            "runner_requests": runner_requests(runner),
            "drafter": type(drafter).__name__ if drafter is not None else None,
            "suffix_cache": cache_state(cache) if cache is not None else None,
            "hook": getattr(hook, "name", None),
            # The hook that shapes drafts now: the switch's active one, else the installed hook's name.
            "active_hook": active_hook_name(hook, drafter),
            # Read before and after a cell's measured load: the plugin's counters for that window.
            "hook_counters": hook_counters(hook),
        }

    def lever_reset_drafter(self, hook_name: str | None = None) -> dict[str, Any]:
        """Empty the suffix cache and the hook's decisions, select `hook_name` on a shared launch;
        refuse while requests are in the runner."""
        before = self.lever_drafter_state()
        if before["runner_requests"]:
            return {"reset": False, "error": "requests in flight", "before": before, "after": before}
        drafter = getattr(self.model_runner, "drafter", None)
        if drafter is None:
            if hook_name:
                error = f"draft hook {hook_name!r} asked of an engine without a drafter"
                return {"reset": False, "error": error, "before": before, "after": before}
            return {"reset": True, "error": None, "before": before, "after": before}
        cache = getattr(drafter, "suffix_cache", None)
        if cache is None:
            error = f"no suffix_cache on the drafter ({before['drafter']})"
            return {"reset": False, "error": error, "before": before, "after": before}
        from lever_plugins.proposer_patch import installed_hook

        hook = installed_hook()
        if hook_name is not None:
            if not hasattr(hook, "select"):
                error = f"draft hook {hook_name!r} asked, but the engine has no switch (LEVER_SWITCH=1)"
                return {"reset": False, "error": error, "before": before, "after": before}
            try:
                hook.select(hook_name)
            except ValueError as exc:
                return {"reset": False, "error": str(exc), "before": before, "after": before}
        drafter.suffix_cache = empty_like(cache)
        if hook is not None and hasattr(hook, "reset_decisions"):
            hook.reset_decisions()
        after = self.lever_drafter_state()
        logger.info(
            "lever_plugins reset: suffix cache %s -> %s", before["suffix_cache"], after["suffix_cache"]
        )
        return {"reset": True, "error": None, "before": before, "after": after}

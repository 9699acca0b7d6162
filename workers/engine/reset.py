"""Reset a drafting engine to fresh between cells, over HTTP (docs/reset.md).

Two calls, with nothing in flight:
1. `POST /collective_rpc {"method": "lever_reset_drafter", "args": [hook]}`: every
   worker's reset extension (lever_plugins/reset_ext.py) replaces its suffix cache
   with an empty one at the same settings and clears the draft hook's decisions;
   on a shared launch (grid.engine_reuse=shared) it also selects the draft hook
   the next cell runs (suffix, kpad or dynk: lever_plugins/switch.py);
2. `POST /reset_prefix_cache`: the scheduler drops every cached KV block.
Both exist only when the engine runs with VLLM_SERVER_DEV_MODE=1
(workers/engine/args.py). A reset is good only if both answered and every
worker reports an empty cache; otherwise `problem` says why and the runner
relaunches the engine. vLLM is not imported here.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

RESET_METHOD = "lever_reset_drafter"
STATE_METHOD = "lever_drafter_state"
HOOK_COUNTERS = ("steps", "drafts", "draft_tokens", "padded_tokens", "truncated_tokens")
DEFAULT_TIMEOUT_S = 30.0


@dataclass
class ResetReport:
    """What a reset did: None for `problem` when the engine is as fresh as a new launch."""

    problem: str | None
    # One entry per worker: lever_reset_drafter's answer (before/after state).
    workers: list[dict[str, Any]] = field(default_factory=list)
    prefix_cache_reset: bool | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def active_hook(self) -> str | None:
        """The draft hook the workers left active (one name if they agree), None without a drafter."""
        names = {(w.get("after") or {}).get("active_hook") for w in self.workers if isinstance(w, dict)}
        return names.pop() if len(names) == 1 else None

    def left(self) -> dict[str, int]:
        """Summed over workers, what the reset left: cached and active requests, tree sequences."""
        totals = {"cached_requests": 0, "active_requests": 0, "global_tree_seqs": 0, "runner_requests": 0}
        for worker in self.workers:
            after = worker.get("after") or {}
            cache = after.get("suffix_cache") or {}
            totals["runner_requests"] += int(after.get("runner_requests") or 0)
            for key in ("cached_requests", "active_requests", "global_tree_seqs"):
                totals[key] += int(cache.get(key) or 0)
        return totals

    def found(self) -> dict[str, int]:
        """Summed over workers, what the reset emptied (the earlier cells' cache)."""
        totals = {"cached_requests": 0, "global_tree_seqs": 0}
        for worker in self.workers:
            cache = (worker.get("before") or {}).get("suffix_cache") or {}
            for key in totals:
                totals[key] += int(cache.get(key) or 0)
        return totals

    @staticmethod
    def empty_columns() -> dict[str, Any]:
        """The columns of a cell with no reset before it (first on its engine, or no drafts)."""
        return dict.fromkeys(
            (
                "engine_reset",
                "engine_reset_s",
                "engine_reset_found_json",
                "engine_reset_left_json",
                "engine_reset_problem",
                "draft_hook",
            )
        )

    def columns(self) -> dict[str, Any]:
        """The cell's summary columns (docs/reset.md lists them)."""
        return {
            "engine_reset": self.ok,
            "engine_reset_s": round(self.seconds, 3),
            "engine_reset_found_json": json.dumps(self.found(), sort_keys=True) if self.workers else None,
            "engine_reset_left_json": json.dumps(self.left(), sort_keys=True) if self.workers else None,
            "engine_reset_problem": self.problem,
            "draft_hook": self.active_hook,
        }


def post(base_url: str, path: str, api_key: str, body: dict | None, timeout_s: float) -> Any:
    """POST JSON (or nothing) and return the parsed answer ({} for an empty body)."""
    data = json.dumps(body).encode() if body is not None else b""
    request = urllib.request.Request(
        base_url + path,
        data=data,
        method="POST",
        # vLLM does not ask for the key on these paths (docs/reset.md); sent anyway, should it start to.
        headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as resp:
        text = resp.read().decode()
    return json.loads(text) if text.strip() else {}


def worker_problem(workers: list[dict[str, Any]], hook: str | None = None) -> str | None:
    """Why the workers' answers do not show an empty cache (and `hook` active where asked), or None."""
    if not workers:
        return "no worker answered lever_reset_drafter"
    for rank, worker in enumerate(workers):
        if not isinstance(worker, dict) or not worker.get("reset"):
            error = worker.get("error") if isinstance(worker, dict) else worker
            return f"worker {rank} did not reset: {error}"
        after = worker.get("after") or {}
        cache = after.get("suffix_cache") or {}
        left = {k: cache.get(k) for k in ("cached_requests", "active_requests", "global_tree_seqs")}
        if any(left.values()) or after.get("runner_requests"):
            runner = after.get("runner_requests")
            return f"worker {rank} left state after the reset: {left}, runner_requests={runner}"
        if hook is not None and after.get("active_hook") != hook:
            return f"worker {rank} runs draft hook {after.get('active_hook')!r} after the reset, not {hook!r}"
    return None


def reset_engine(
    base_url: str, api_key: str, timeout_s: float = DEFAULT_TIMEOUT_S, hook: str | None = None
) -> ResetReport:
    """Reset the drafter and the prefix cache, selecting `hook` on a shared launch (None: keep the
    launch's own); a report whose `problem` is None if the engine is fresh."""
    start = time.perf_counter()
    report = ResetReport(problem=None)
    body: dict[str, Any] = {"method": RESET_METHOD, "timeout": timeout_s}
    if hook is not None:
        body["args"] = [hook]  # vLLM passes only strings through (serve/dev/rpc/api_router.py)
    try:
        answer = post(base_url, "/collective_rpc", api_key, body, timeout_s)
        report.workers = list(answer.get("results") or []) if isinstance(answer, dict) else []
        if (problem := worker_problem(report.workers, hook)) is None:
            prefix = post(base_url, "/reset_prefix_cache", api_key, None, timeout_s)
            report.prefix_cache_reset = bool(prefix.get("success")) if isinstance(prefix, dict) else False
            if not report.prefix_cache_reset:
                problem = "vLLM refused to reset the prefix cache (blocks still held)"
        report.problem = problem
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        hint = " (is VLLM_SERVER_DEV_MODE=1 set?)" if exc.code == 404 else ""
        report.problem = f"HTTP {exc.code} from {exc.url}{hint}: {detail}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        report.problem = f"reset failed: {type(exc).__name__}: {exc}"
    report.seconds = time.perf_counter() - start
    return report


def read_hook_counters(base_url: str, api_key: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict | None:
    """The draft hooks' cumulative counters as the first worker reports them (every rank shapes the
    same drafts), or None when the engine does not answer (no reset extension, or an error)."""
    try:
        answer = post(
            base_url, "/collective_rpc", api_key, {"method": STATE_METHOD, "timeout": timeout_s}, timeout_s
        )
    except (urllib.error.URLError, OSError, ValueError):
        return None
    workers = answer.get("results") if isinstance(answer, dict) else None
    first = workers[0] if workers and isinstance(workers[0], dict) else None
    counters = first.get("hook_counters") if first else None
    return counters if isinstance(counters, dict) else None


def hook_window_columns(hook: str | None, before: dict | None, after: dict | None) -> dict[str, Any]:
    """A cell's `hook_*` columns: what its own draft hook (kpad or dynk) did inside the measured
    load, the counters after less those before; None where the cell has no plugin hook or a read failed.

    hook_padded_share: padded tokens / draft tokens, the share of verified draft tokens that the
    proposer did not draft (kpad pads every draft to K; dynk to its chosen K).
    """
    columns: dict[str, Any] = {f"hook_{name}": None for name in HOOK_COUNTERS}
    columns["hook_padded_share"] = None
    if hook is None or before is None or after is None or hook not in after:
        return columns
    start = before.get(hook) or {}
    for name in HOOK_COUNTERS:
        columns[f"hook_{name}"] = int(after[hook].get(name, 0)) - int(start.get(name, 0))
    tokens = columns["hook_draft_tokens"]
    columns["hook_padded_share"] = columns["hook_padded_tokens"] / tokens if tokens else None
    return columns

"""`switch` plugin: one engine runs suffix, kpad or dynk drafts, chosen between cells (issue 29 item 2).

suffix K, bestkpad K and dynk with max K = K launch with the same `vllm serve`
arguments: only the draft hook differs, and it acts inside vLLM. With
LEVER_SWITCH=1 (set by workers/engine/args.py on a shared launch,
grid.engine_reuse=shared) this plugin wraps the suffix proposer with a hook
that forwards each step to the active one of:
- `suffix`: nothing (vLLM's own suffix drafts, untouched);
- `kpad`: lever_plugins.kpad.KPadHook;
- `dynk`: lever_plugins.dynk.DynkHook, at LEVER_DYNK_KS and its other settings.
The engine starts on `suffix`. The reset extension (lever_plugins/reset_ext.py)
selects the hook between cells, with nothing in flight. Each inner hook lives
as long as the engine and keeps its cumulative counters and log lines, so the
harness reads a cell's own window as a delta, as on a launch of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from lever_plugins import env

ENV_FLAG = "LEVER_SWITCH"
PLAIN = "suffix"
HOOK_NAMES = (PLAIN, "kpad", "dynk")

logger = logging.getLogger("vllm.lever_plugins")


@dataclass
class SwitchHook:
    """Forwards each step's drafts to the active hook; `suffix` leaves them as vLLM drafted them."""

    hooks: dict[str, Any] = field(default_factory=dict)
    active: str = PLAIN
    name: str = "switch"

    def __call__(
        self,
        proposer: Any,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        drafts: list[list[int]],
    ) -> list[list[int]]:
        hook = self.hooks.get(self.active)
        return drafts if hook is None else hook(proposer, input_batch, sampled_token_ids, drafts)

    def select(self, name: str) -> None:
        """Make `name` the active hook, its decisions as on a just-started engine."""
        if name not in HOOK_NAMES:
            raise ValueError(f"unknown draft hook {name!r}; expected one of {', '.join(HOOK_NAMES)}")
        self.active = name
        self.reset_decisions()

    def reset_decisions(self) -> None:
        """Every inner hook's decision state back to a fresh engine's (counters stay)."""
        for hook in self.hooks.values():
            if hasattr(hook, "reset_decisions"):
                hook.reset_decisions()

    def observe_mode(self, mode: object) -> None:
        """The dispatcher's runtime mode, for dynk's CUDA-graph tally while dynk is active."""
        hook = self.hooks.get(self.active)
        if hook is not None and hasattr(hook, "observe_mode"):
            hook.observe_mode(mode)


def build_hooks() -> dict[str, Any]:
    """kpad and dynk hooks at the settings in this process's environment (their own modules' variables)."""
    from lever_plugins import dynk, kpad

    return {"kpad": kpad.hook_from_env(), "dynk": dynk.hook_from_env()}


def register() -> None:
    """vLLM general-plugin entry point: install the switch when LEVER_SWITCH=1."""
    if not env.enabled(ENV_FLAG):
        return
    from lever_plugins.dispatch_patch import install_observer
    from lever_plugins.proposer_patch import install

    hook = SwitchHook(hooks=build_hooks())
    if install(hook):
        install_observer(hook.observe_mode)

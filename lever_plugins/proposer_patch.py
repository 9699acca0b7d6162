"""Wrap vLLM's suffix-decoding proposer so a shaping hook sees (and rewrites) every step's drafts.

Patch point: the method `SuffixDecodingProposer.propose` on the class in
`vllm.v1.spec_decode.suffix_decoding`. The model runner (GPU, and the CPU runner
that subclasses it) builds `self.drafter = SuffixDecodingProposer(...)` and calls
`self.drafter.propose(...)`, so replacing the class attribute reaches the
instance however the runner module imported the name. vLLM loads general
plugins in the engine-core and worker processes before the runner is built.

Versions: the wrapper reads `input_batch` and `sampled_token_ids` by parameter
name, so it does not depend on their position. Known signatures:
- vLLM 0.26.0 (GPU wheel), 0.32.0 (CPU build) and 0.33.0 (checked at source: docs/compat.md):
  (self, num_speculative_tokens, input_batch, sampled_token_ids, slot_mappings=None);
- older vLLM (about 0.11, still called so by vllm-ascend): (self, input_batch, sampled_token_ids).
Any other signature raises at plugin load, so the engine fails to start rather
than run a lever that silently does nothing.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, Protocol

from lever_plugins.patch_points import PROPOSE_SIGNATURES, PROPOSER_CLASS, PROPOSER_MODULE

# Where the proposer is and the signatures it was checked against: the patch-point table
# (lever_plugins/patch_points.py), which tests and `make compat` check against each vLLM.
KNOWN_SIGNATURES = set(PROPOSE_SIGNATURES)
# Set on the wrapper so a second register() in the same process is recognised.
PATCH_ATTR = "__lever_plugins_hook__"
# The hook object itself, for the reset extension (lever_plugins/reset_ext.py).
HOOK_ATTR = "__lever_plugins_hook_object__"

logger = logging.getLogger("vllm.lever_plugins")


class PluginError(RuntimeError):
    """The installed vLLM does not look like one this plugin knows how to patch."""


class DraftHook(Protocol):
    """Rewrites one step's drafts; called with the proposer, its batch, and its own drafts."""

    name: str

    def __call__(
        self,
        proposer: Any,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        drafts: list[list[int]],
    ) -> list[list[int]]: ...


def check_signature(propose: Callable[..., Any]) -> tuple[str, ...]:
    """Parameter names of `propose`; raise PluginError if it is not a known signature."""
    params = tuple(inspect.signature(propose).parameters)
    if params not in KNOWN_SIGNATURES:
        raise PluginError(
            f"{PROPOSER_CLASS}.propose{params} is not a signature lever_plugins was checked against "
            f"({sorted(KNOWN_SIGNATURES)}); read the new proposer and update lever_plugins/proposer_patch.py"
        )
    return params


def wrap_propose(propose: Callable[..., list[list[int]]], hook: DraftHook) -> Callable[..., list[list[int]]]:
    """`propose` followed by `hook` on its drafts; arguments found by name, whatever their order."""
    signature = inspect.signature(propose)

    @functools.wraps(propose)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> list[list[int]]:
        drafts = propose(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs).arguments
        return hook(self, bound["input_batch"], bound["sampled_token_ids"], drafts)

    setattr(wrapper, PATCH_ATTR, hook.name)
    setattr(wrapper, HOOK_ATTR, hook)
    return wrapper


def proposer_class() -> type:
    import importlib

    return getattr(importlib.import_module(PROPOSER_MODULE), PROPOSER_CLASS)


def installed_hook() -> DraftHook | None:
    """The hook wrapping the proposer in this process, or None (plain suffix decoding)."""
    return getattr(proposer_class().propose, HOOK_ATTR, None)


def install(hook: DraftHook) -> bool:
    """Patch the proposer class with `hook`; False if this hook is already installed.

    Two different hooks (kpad and dynk both enabled) raise: they would fight over K.
    """
    cls = proposer_class()
    current = cls.propose
    installed = getattr(current, PATCH_ATTR, None)
    if installed == hook.name:
        return False
    if installed is not None:
        raise PluginError(f"lever plugin '{installed}' already wraps {PROPOSER_CLASS}; enable only one")
    check_signature(current)
    cls.propose = wrap_propose(current, hook)
    logger.info("lever_plugins %s: wrapped %s.%s.propose", hook.name, PROPOSER_MODULE, PROPOSER_CLASS)
    return True

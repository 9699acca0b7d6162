"""Observe the CUDA-graph runtime mode vLLM's dispatcher picks for each forward pass (dynk only).

Patch point: `CudagraphDispatcher.dispatch` on the class in
`vllm.v1.cudagraph_dispatcher`. The GPU model runner (and the CPU runner,
which subclasses it) builds `self.cudagraph_dispatcher = CudagraphDispatcher(...)`
and, in `_determine_batch_execution_and_padding`, calls its `dispatch` once per
forward pass before running the model; replacing the class attribute reaches
that instance. The wrapper passes every argument through untouched and only
reads the first element of the result, the runtime mode (`CUDAGraphMode.FULL`,
`PIECEWISE` or `NONE`), so it does not depend on dispatch's parameters, which
changed across versions:
- vLLM 0.26.0, 0.32.0 (CPU build) and 0.33.0: dispatch(num_tokens, uniform_decode, has_lora,
  num_active_loras, valid_modes, invalid_modes) -> (CUDAGraphMode, BatchDescriptor);
- older releases: dispatch(batch_descriptor, use_cascade_attn) -> (CUDAGraphMode, BatchDescriptor | None).
It never changes which graph runs: observing only.

On the CPU engine (and with --enforce-eager) the dispatcher has no keys and
returns NONE for every pass, which is what gets recorded.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from typing import Any

# Where the dispatcher is: the patch-point table (lever_plugins/patch_points.py).
from lever_plugins.patch_points import DISPATCHER_CLASS, DISPATCHER_MODULE

# Set on the wrapper so a second register() in the same process is recognised.
PATCH_ATTR = "__lever_plugins_dispatch_observer__"

logger = logging.getLogger("vllm.lever_plugins")

ModeObserver = Callable[[object], None]


def wrap_dispatch(dispatch: Callable[..., Any], observe: ModeObserver) -> Callable[..., Any]:
    """`dispatch` unchanged, with its result's runtime mode handed to `observe`."""

    @functools.wraps(dispatch)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = dispatch(self, *args, **kwargs)
        observe(result[0])
        return result

    setattr(wrapper, PATCH_ATTR, True)
    return wrapper


def install_observer(observe: ModeObserver) -> bool:
    """Wrap the dispatcher class; False (and a warning) where this vLLM has none to wrap.

    A missing dispatcher loses only the per-K runtime-mode counts, not the lever,
    so it warns instead of failing the engine; the harness then stores no mode columns.
    """
    try:
        cls = getattr(importlib.import_module(DISPATCHER_MODULE), DISPATCHER_CLASS)
        current = cls.dispatch
    except (ImportError, AttributeError) as exc:
        logger.warning(
            "lever_plugins dynk: no %s.%s.dispatch to observe (%s)", DISPATCHER_MODULE, DISPATCHER_CLASS, exc
        )
        return False
    if getattr(current, PATCH_ATTR, False):
        return False
    cls.dispatch = wrap_dispatch(current, observe)
    logger.info("lever_plugins dynk: observing %s.%s.dispatch", DISPATCHER_MODULE, DISPATCHER_CLASS)
    return True

"""`kpad` plugin: every decoding request's suffix draft padded (or truncated) to exactly K.

K is the engine's num_speculative_tokens. Enabled by LEVER_KPAD=1 (conf/lever/bestkpad.yaml);
otherwise register() returns before touching vLLM.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from lever_plugins import env
from lever_plugins.log_lines import kpad_line
from lever_plugins.pad_policy import PAD_TOKEN_ID, PadStats, shape_drafts

ENV_FLAG = "LEVER_KPAD"
ENV_LOG_EVERY_STEPS = "LEVER_KPAD_LOG_EVERY_STEPS"

logger = logging.getLogger("vllm.lever_plugins")


@dataclass
class KPadHook:
    """The draft hook: shape to the proposer's K, keep cumulative counters, log them now and then."""

    log_every_steps: int = env.DEFAULT_LOG_EVERY_STEPS
    pad_id: int = PAD_TOKEN_ID
    name: str = "kpad"
    steps: int = 0
    stats: PadStats = field(default_factory=PadStats)

    def __call__(
        self,
        proposer: Any,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        drafts: list[list[int]],
    ) -> list[list[int]]:
        k = int(proposer.num_speculative_tokens)
        num_tokens = input_batch.num_tokens_no_spec[: len(sampled_token_ids)]
        shaped, step_stats = shape_drafts(
            drafts, sampled_token_ids, num_tokens, k, int(proposer.max_model_len), self.pad_id
        )
        if step_stats.drafts:
            self.steps += 1
            self.stats.add(step_stats)
            if self.steps == 1 or self.steps % self.log_every_steps == 0:
                logger.info(kpad_line(self.steps, k, self.pad_id, self.stats))
        return shaped


def hook_from_env() -> KPadHook:
    """The hook at this process's LEVER_KPAD_* settings (also the switch's: lever_plugins/switch.py)."""
    return KPadHook(log_every_steps=env.int_setting(ENV_LOG_EVERY_STEPS, env.DEFAULT_LOG_EVERY_STEPS))


def register() -> None:
    """vLLM general-plugin entry point: wrap the suffix proposer when LEVER_KPAD=1."""
    if not env.enabled(ENV_FLAG):
        return
    from lever_plugins.proposer_patch import install

    install(hook_from_env())

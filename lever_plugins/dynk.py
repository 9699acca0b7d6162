"""`dynk` plugin: a controller picks K each step from LEVER_DYNK_KS; every draft is shaped to it.

The engine is launched with num_speculative_tokens = max(ks) (conf/lever/dynk.yaml) so
the scheduler and KV allocation allow the largest K; each step the controller reads
how many of the previous step's draft tokens were accepted (a request's sampled
tokens this step are its accepted drafts plus one), updates its acceptance
estimate, picks K for the current batch size, and pads/truncates every decoding
request's draft to that K, so the step's decode rows stay uniform.
Enabled by LEVER_DYNK=1; otherwise register() returns before touching vLLM.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from lever_plugins import env
from lever_plugins.controller import DEFAULT_KS, DEFAULT_TOKEN_COST, DynamicK
from lever_plugins.log_lines import dynk_line
from lever_plugins.pad_policy import PAD_TOKEN_ID, PadStats, shape_drafts

ENV_FLAG = "LEVER_DYNK"
ENV_KS = "LEVER_DYNK_KS"
ENV_TOKEN_COST = "LEVER_DYNK_TOKEN_COST"
ENV_LOG_EVERY_STEPS = "LEVER_DYNK_LOG_EVERY_STEPS"

logger = logging.getLogger("vllm.lever_plugins")


def step_outcomes(
    req_ids: list[str], sampled_token_ids: list[list[int]], last_draft_len: dict[str, int]
) -> list[tuple[int, int]]:
    """(drafted, accepted) per request that decoded this step: accepted = sampled - 1."""
    return [
        (last_draft_len.get(req_id, 0), len(sampled) - 1)
        for req_id, sampled in zip(req_ids, sampled_token_ids, strict=True)
        if sampled
    ]


@dataclass
class DynkHook:
    """The draft hook: decide K, shape drafts to it, remember draft lengths for next step's outcomes."""

    controller: DynamicK
    log_every_steps: int = env.DEFAULT_LOG_EVERY_STEPS
    pad_id: int = PAD_TOKEN_ID
    name: str = "dynk"
    stats: PadStats = field(default_factory=PadStats)
    last_draft_len: dict[str, int] = field(default_factory=dict)
    checked_max_k: bool = False

    def fit_ks_to_engine(self, engine_k: int) -> None:
        """Drop K values above the engine's num_speculative_tokens (the scheduler would cut them)."""
        self.checked_max_k = True
        ks = tuple(k for k in self.controller.ks if k <= engine_k) or (engine_k,)
        if ks != self.controller.ks:
            logger.warning(
                "lever_plugins dynk: engine num_speculative_tokens=%d < max K; using ks=%s", engine_k, ks
            )
            self.controller = DynamicK(ks=ks, token_cost=self.controller.token_cost)

    def __call__(
        self,
        proposer: Any,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        drafts: list[list[int]],
    ) -> list[list[int]]:
        if not self.checked_max_k:
            self.fit_ks_to_engine(int(proposer.num_speculative_tokens))
        req_ids = list(input_batch.req_ids[: len(sampled_token_ids)])
        batch_size = sum(1 for sampled in sampled_token_ids if sampled)
        if batch_size == 0:
            return drafts
        outcomes = step_outcomes(req_ids, sampled_token_ids, self.last_draft_len)
        k = self.controller.decide(outcomes, batch_size)
        num_tokens = input_batch.num_tokens_no_spec[: len(sampled_token_ids)]
        shaped, step_stats = shape_drafts(
            drafts, sampled_token_ids, num_tokens, k, int(proposer.max_model_len), self.pad_id
        )
        self.last_draft_len = {req_id: len(d) for req_id, d in zip(req_ids, shaped, strict=True) if d}
        self.stats.add(step_stats)
        steps = self.controller.steps
        if steps == 1 or steps % self.log_every_steps == 0:
            logger.info(dynk_line(self.controller, self.stats))
        return shaped


def register() -> None:
    """vLLM general-plugin entry point: install the controller when LEVER_DYNK=1."""
    if not env.enabled(ENV_FLAG):
        return
    from lever_plugins.proposer_patch import install

    controller = DynamicK(
        ks=env.ks_setting(ENV_KS, DEFAULT_KS),
        token_cost=env.float_setting(ENV_TOKEN_COST, DEFAULT_TOKEN_COST),
    )
    install(
        DynkHook(
            controller=controller,
            log_every_steps=env.int_setting(ENV_LOG_EVERY_STEPS, env.DEFAULT_LOG_EVERY_STEPS),
        )
    )

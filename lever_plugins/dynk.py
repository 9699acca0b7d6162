"""`dynk` plugin: a controller picks K each step from LEVER_DYNK_KS; every draft is shaped to it.

The engine is launched with num_speculative_tokens = max(ks) (conf/lever/dynk.yaml) so
the scheduler and KV allocation allow the largest K; each step the controller reads
how many of the previous step's draft tokens were accepted (a request's sampled
tokens this step are its accepted drafts plus one), updates its acceptance
estimate, picks K for the current batch size, and pads/truncates every decoding
request's draft to that K, so the step's decode rows stay uniform.

It also records what that costs in CUDA graphs: vLLM replays a FULL graph only
for a uniform decode batch of query length 1 + max(ks), so each forward pass is
charged, with the runtime mode the dispatcher chose for it, to the K of the
drafts it verified (lever_plugins/step_tally.py, dispatch_patch.py).
Enabled by LEVER_DYNK=1; otherwise register() returns before touching vLLM.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lever_plugins import env
from lever_plugins.controller import DEFAULT_KS, DEFAULT_TOKEN_COST, AcceptanceEstimate, DynamicK
from lever_plugins.log_lines import dynk_line
from lever_plugins.pad_policy import PAD_TOKEN_ID, PadStats, shape_drafts
from lever_plugins.step_tally import StepTally, mode_name, verified_drafts

ENV_FLAG = "LEVER_DYNK"
ENV_KS = "LEVER_DYNK_KS"
ENV_TOKEN_COST = "LEVER_DYNK_TOKEN_COST"
ENV_LOG_EVERY_STEPS = "LEVER_DYNK_LOG_EVERY_STEPS"
ENV_IDLE_FLUSH_S = "LEVER_DYNK_IDLE_FLUSH_S"
# After this long without a step the cumulative line is logged once more (marked idle=1),
# so the harness reads exact totals at the end of a load instead of the last periodic line's.
DEFAULT_IDLE_FLUSH_S = 0.5

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
    """The draft hook: decide K, shape drafts to it, remember draft lengths for next step's outcomes.

    Also the dispatcher's observer (`observe_mode`) and the idle flush
    (`flush_if_idle`), which run on other call paths or threads than the hook,
    hence the lock around every counter update and every line written.
    """

    controller: DynamicK
    log_every_steps: int = env.DEFAULT_LOG_EVERY_STEPS
    idle_flush_s: float = DEFAULT_IDLE_FLUSH_S
    pad_id: int = PAD_TOKEN_ID
    name: str = "dynk"
    stats: PadStats = field(default_factory=PadStats)
    tally: StepTally = field(init=False)
    last_draft_len: dict[str, int] = field(default_factory=dict)
    # K the drafts in last_draft_len were shaped to (0 before any draft).
    last_draft_k: int = 0
    # Runtime mode of the latest dispatch, None once charged to a pass (or before any).
    last_mode: str | None = None
    checked_max_k: bool = False
    last_step_s: float = 0.0
    # Steps ran since the last idle line (a periodic line does not count: it may be N steps stale
    # by the time the engine goes idle, and the reader waits for an idle line).
    steps_since_idle_line: bool = False
    # The last line written was the idle flush: the next step writes one at once, so
    # a reader that sees an idle line last knows nothing ran after it.
    idle_logged: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    flusher: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.tally = StepTally(self.controller.ks)

    def fit_ks_to_engine(self, engine_k: int) -> None:
        """Drop K values above the engine's num_speculative_tokens (the scheduler would cut them)."""
        self.checked_max_k = True
        ks = tuple(k for k in self.controller.ks if k <= engine_k) or (engine_k,)
        if ks != self.controller.ks:
            logger.warning(
                "lever_plugins dynk: engine num_speculative_tokens=%d < max K; using ks=%s", engine_k, ks
            )
            self.controller = DynamicK(ks=ks, token_cost=self.controller.token_cost)
            self.tally.reset_ks(self.controller.ks)

    def reset_decisions(self) -> None:
        """Back to a just-started engine's decisions (lever_plugins/reset_ext.py): the acceptance
        estimate and the last step's drafts; the cumulative counters, read as deltas, stay."""
        with self.lock:
            self.controller.estimate = AcceptanceEstimate(alpha=self.controller.estimate.alpha)
            self.controller.last_k, self.controller.last_batch_size = 0, 0
            self.last_draft_len, self.last_draft_k, self.last_mode = {}, 0, None

    def observe_mode(self, mode: object) -> None:
        """The dispatcher's runtime mode for the coming forward pass (the last dispatch wins)."""
        self.last_mode = mode_name(mode)

    def __call__(
        self,
        proposer: Any,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        drafts: list[list[int]],
    ) -> list[list[int]]:
        with self.lock:
            return self._shape(proposer, input_batch, sampled_token_ids, drafts)

    def _shape(
        self,
        proposer: Any,
        input_batch: Any,
        sampled_token_ids: list[list[int]],
        drafts: list[list[int]],
    ) -> list[list[int]]:
        if not self.checked_max_k:
            self.fit_ks_to_engine(int(proposer.num_speculative_tokens))
            self.start_flusher()
        req_ids = list(input_batch.req_ids[: len(sampled_token_ids)])
        # This step's forward pass verified last step's drafts: charge it to their K.
        verified = verified_drafts(req_ids, sampled_token_ids, self.last_draft_len)
        self.tally.record(self.last_draft_k, verified, self.last_mode)
        self.last_mode = None
        self.mark_step()
        batch_size = sum(1 for sampled in sampled_token_ids if sampled)
        if batch_size == 0:
            self.last_draft_len, self.last_draft_k = {}, 0
            if self.idle_logged:
                self.log(idle=False)
            return drafts
        outcomes = step_outcomes(req_ids, sampled_token_ids, self.last_draft_len)
        k = self.controller.decide(outcomes, batch_size)
        num_tokens = input_batch.num_tokens_no_spec[: len(sampled_token_ids)]
        shaped, step_stats = shape_drafts(
            drafts, sampled_token_ids, num_tokens, k, int(proposer.max_model_len), self.pad_id
        )
        self.last_draft_len = {req_id: len(d) for req_id, d in zip(req_ids, shaped, strict=True) if d}
        self.last_draft_k = k
        self.stats.add(step_stats)
        steps = self.controller.steps
        if steps == 1 or steps % self.log_every_steps == 0 or self.idle_logged:
            self.log(idle=False)
        return shaped

    def mark_step(self) -> None:
        self.last_step_s = time.monotonic()
        self.steps_since_idle_line = True

    def log(self, idle: bool) -> None:
        logger.info(dynk_line(self.controller, self.stats, self.tally, idle=idle))
        self.idle_logged = idle
        if idle:
            self.steps_since_idle_line = False

    def flush_if_idle(self, now_s: float) -> bool:
        """Log the totals (idle=1) if steps ran since the last idle line and none for idle_flush_s."""
        with self.lock:
            if not self.steps_since_idle_line or now_s - self.last_step_s < self.idle_flush_s:
                return False
            self.log(idle=True)
            return True

    def start_flusher(self) -> None:
        """One daemon thread per worker process polls for idleness (a step only stores a timestamp)."""
        if self.flusher is not None or self.idle_flush_s <= 0:
            return
        poll_s = max(0.02, self.idle_flush_s / 5)

        def run() -> None:
            while True:
                time.sleep(poll_s)
                self.flush_if_idle(time.monotonic())

        self.flusher = threading.Thread(target=run, name="lever-dynk-idle-flush", daemon=True)
        self.flusher.start()


def hook_from_env() -> DynkHook:
    """The hook at this process's LEVER_DYNK_* settings (also the switch's: lever_plugins/switch.py)."""
    controller = DynamicK(
        ks=env.ks_setting(ENV_KS, DEFAULT_KS),
        token_cost=env.float_setting(ENV_TOKEN_COST, DEFAULT_TOKEN_COST),
    )
    return DynkHook(
        controller=controller,
        log_every_steps=env.int_setting(ENV_LOG_EVERY_STEPS, env.DEFAULT_LOG_EVERY_STEPS),
        idle_flush_s=env.float_setting(ENV_IDLE_FLUSH_S, DEFAULT_IDLE_FLUSH_S),
    )


def register() -> None:
    """vLLM general-plugin entry point: install the controller when LEVER_DYNK=1."""
    if not env.enabled(ENV_FLAG):
        return
    from lever_plugins.dispatch_patch import install_observer
    from lever_plugins.proposer_patch import install

    hook = hook_from_env()
    # Observe only where this hook was installed: a second register() in one process keeps the first pair.
    if install(hook):
        install_observer(hook.observe_mode)

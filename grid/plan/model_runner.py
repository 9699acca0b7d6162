"""Which of vLLM's model runners each lever runs on, and the launches vLLM refuses (issue 46 item 1).

What vLLM's own config code decides (vllm/config/vllm.py: `use_v2_model_runner`, its unsupported
features, the async-scheduling rule), derived by `make compat` from create_engine_config in 0.26,
0.32 and 0.33 on a GPU host's terms (Triton present; docs/compat.md):
- Model Runner V2 wherever it supports the launch: every lever without drafts (van, van_noasync,
  w4a4), on dense models from 0.26 and on MoE models from 0.32 (0.26 kept most MoE models on V1);
- suffix decoding is not supported on Model Runner V2: suffix, bestkpad and dynk fall back to the
  V1 runner, which turns async scheduling off for them;
- forcing V2 (VLLM_USE_V2_MODEL_RUNNER=1) or asking for async scheduling with suffix decoding
  refuses the launch (the engine does not start).
So on a GPU a comparison of a drafting lever with van also compares runners. The CPU build has no
Triton and runs every lever on V1. Pure: from the engine specs, no vLLM.
"""

from __future__ import annotations

from collections.abc import Iterable

from vocab.cells import EngineSpec

CHECKED = "vLLM 0.26-0.33"
V2_ENV = "VLLM_USE_V2_MODEL_RUNNER"
TRUE = ("1", "true", "True")


def drafts_with_suffix(spec: EngineSpec) -> bool:
    return spec.lever.spec_method == "suffix"


def runner(spec: EngineSpec) -> str:
    """The runner vLLM picks for the launch on a GPU: V1 for suffix decoding, else Model Runner V2."""
    return "V1" if drafts_with_suffix(spec) else "V2"


def refusal(spec: EngineSpec) -> str | None:
    """Why vLLM would refuse this launch at start, or None."""
    if not drafts_with_suffix(spec):
        return None
    env = {**spec.engine.env, **spec.lever.env}
    if env.get(V2_ENV) in TRUE:
        return (
            f"{spec.label}: {V2_ENV}=1 with suffix decoding: {CHECKED} refuse the launch (Model Runner V2 "
            f"does not support suffix decoding); drop {V2_ENV} from engine.env / the lever's env"
        )
    if spec.lever.async_scheduling:
        return (
            f"{spec.label}: async scheduling asked with suffix decoding: {CHECKED} refuse the launch (the "
            "V1 runner suffix falls back to has no async scheduling for it); set the lever's "
            "async_scheduling to null or false"
        )
    return None


def runner_note(specs: Iterable[EngineSpec]) -> str | None:
    """One line where the grid compares levers on different runners (a GPU's); None where it does not."""
    levers: dict[str, set[str]] = {"V1": set(), "V2": set()}
    moe_v2 = False
    for spec in specs:
        levers[runner(spec)].add(spec.lever.name)
        moe_v2 |= runner(spec) == "V2" and spec.model.moe
    if not levers["V1"] or not levers["V2"]:
        return None
    return (
        f"model runner on a GPU ({CHECKED}, docs/compat.md): {', '.join(sorted(levers['V1']))} on the V1 "
        "runner with async scheduling off (Model Runner V2 has no suffix decoding), "
        f"{', '.join(sorted(levers['V2']))} on Model Runner V2: comparing them also compares runners"
        + ("; MoE models only from 0.32 (0.26 kept most on V1)" if moe_v2 else "")
        + "; the CPU build runs every lever on V1"
    )

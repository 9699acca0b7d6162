"""`python -m experiments.tune model=<name> corpora=[...]`: the study's procedure as one command.

van -> suffix -> K-pad -> best K -> W4A4 (only with a quantised variant) ->
dynamic K -> confirmation, each stage one grid run (same scheduler, same store, its own
session with its drift anchor), so an interrupted tune resumes like any grid:
run it again and finished stages are read back from the store. Each stage measures
van, the incumbent and its candidate in that one session on prompts of its own
(`paired_stages`), so the comparison is paired by repeat and an offset between
sessions cancels. Every decision is made by experiments/decide.py from the
stored figures and written down with its evidence.

The procedure's choice is the maximum of noisy figures (the winner's curse), and a
tune of several keep/drop tests deploys a lever that does nothing far more often
than one test's 5 % (`make power`, experiments/procedure_power.py). So the tune
ends with a confirmation: the choice against van again, in a fresh session with new
seeds (`confirm_seed`: new prompts, new cell keys, fresh engines), paired by repeat;
final.yaml and serve.sh deploy the choice only when the confirmation is a real gain,
and van otherwise, with the unconfirmed candidate and its figures beside it. The
speedup reported is the confirmation's, with the tuning figure beside it. Outputs
per model, under `out_dir/<model>/`:

  final.yaml     the deployed lever and K (per corpus too), why, the candidate, the figures
  serve.sh       the exact `vllm serve` command that reproduces it, plugin environment included
  decisions.md   the decision log: one row per stage with figures, drift band and gate verdicts

Configuration: conf/tune/tune.yaml (schema TuneConfig in experiments/tune_procedure.py), composed with
Hydra's compose API like the grid's, so a bad name or override fails first.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from experiments.procedure_power import simulated_deploy_rate
from experiments.tune_procedure import (
    STAGES,
    Tune,
    TuneConfig,
    compose_tune,
    confirm,
    deployment,
    lever_overrides,
    procedure,
    stage_base,
    unconfirmed_note,
    write_outputs,
)
from experiments.tune_size import (
    FIT_DROP_ORDER,
    MAX_LAUNCHES,
    Costs,
    Design,
    Noise,
    cheapest_design,
    design_overrides,
    detectable_gain,
    fitted,
    gain_within,
    noise_for,
    power_by_launch,
    stage_lists,
    tune_budget,
    tune_costs,
    verified_design,
)
from grid.config.catalog import catalog_of
from grid.config.compose import compose_config
from grid.orchestrate.run import make_console
from grid.orchestrate.session import new_session_id
from store.space import write_probe
from vocab.errors import ConfigError, GridError
from vocab.paths import project_path, store_path
from vocab.schema import ModelSpec

# Names other modules and tests import from here (the procedure lives in experiments/tune_procedure.py).
__all__ = [
    "STAGES",
    "Sizing",
    "Tune",
    "TuneConfig",
    "compose_tune",
    "confirm",
    "deployment",
    "main",
    "procedure",
    "size_stages",
    "tune",
    "write_outputs",
]
MAX_LAUNCHES_WORDS = f"{MAX_LAUNCHES} launches"


# The levers each stage measures on the way to deploying K-pad (van beside each: paired stages), for
# pricing the tune before it starts (the path of a lever kept at every stage: the dearest one).
def priced_stages(
    cfg: TuneConfig, base: list[str], stages: Sequence[str] | None = None, quantized: bool = False
) -> list[list[str]]:
    """Each stage's grid overrides as the tune would run them (levers and Ks), for tune_size.tune_costs:
    `stages` (default cfg.stages); w4a4 only where the model has a quantised variant (`quantized`)."""
    levers = {
        "suffix": {"van": [], "suffix": [cfg.suffix_k]},
        "kpad": {"van": [], "suffix": [cfg.suffix_k], "bestkpad": [cfg.kpad_k]},
        "best_k": {"van": [], "bestkpad": sorted({cfg.kpad_k, *cfg.sweep_ks})},
        "dynk": {"van": [], "bestkpad": [cfg.kpad_k], "dynk": [cfg.kpad_k]},
        "confirm": {"van": [], "bestkpad": [cfg.kpad_k]},
    }
    if quantized:
        levers["w4a4"] = {"van": [], "bestkpad": [cfg.kpad_k], "w4a4": []}
    out = []
    for stage in cfg.stages if stages is None else stages:
        if stage not in levers:  # van is measured in every stage; w4a4 only with a quantised variant
            continue
        out.append([*base, *lever_overrides(levers[stage])])
    return out


def formula_words(added: int) -> str:
    """', 2 launches added to the formula's' (or taken from it), '' where the formula's design stood."""
    if added == 0:
        return ""
    count = f"{abs(added)} launch{'es' if abs(added) > 1 else ''}"
    return f", {count} {'added to' if added > 0 else 'taken from'} the formula's"


def sets_repeats(overrides: Sequence[str]) -> bool:
    """Whether the user's grid overrides fix grid.repeats (or its launches) themselves."""
    return any(o.lstrip("+").startswith(("grid.repeats=", "grid.launches_per_argv=")) for o in overrides)


@dataclass
class Sizing:
    """What size_stages decided: the grid overrides every stage adds, and the stages the tune runs."""

    grid_overrides: list[str]
    stages: list[str]


def pct(gain: float) -> str:
    """'+10%' for a whole percent, '+19.5%' otherwise."""
    whole = abs(gain * 100 - round(gain * 100)) < 1e-6
    return f"{gain:+.0%}" if whole else f"{gain:+.1%}"


def gain_words(gain: float) -> str:
    """'+16.1%', or 'nothing' where no gain is seen within the budget."""
    return "nothing" if math.isinf(gain) else f"{gain:+.1%}"


def left_out_words(configured: Sequence[str], stages: Sequence[str]) -> str:
    """'dynk and best_k': the stages of `configured` not in `stages`, in the order the fit drops them."""
    return " and ".join(s for s in FIT_DROP_ORDER if s in configured and s not in stages)


@dataclass(frozen=True)
class StageFit:
    """The stage list a tune runs within its budget (experiments/tune_size.py FIT_DROP_ORDER)."""

    stages: tuple[str, ...]
    costs: Costs
    gain: float  # the smallest gain it sees within the budget by the formula (math.inf: none)
    said: bool  # whether the fit's lines said the gains (so the budget's own line is not said again)
    configured_costs: Costs | None = None  # the configured list's, where the fit left stages out


def fit_stages(
    cfg: TuneConfig,
    base: list[str],
    noise: Noise,
    shared: bool,
    budget: tuple[float, str],
    quantized: bool,
    console: Console,
) -> StageFit:
    """The stage list the tune runs: where the configured stages see a real size.min_gain lever within
    the budget, or there is no cap, they as they are; else the list of stage_lists (the search stages
    left out in FIT_DROP_ORDER) that sees the smallest gain within it, a tie keeping the longer list,
    said in two lines: the gain each list sees, what was left out and why, and what budget would keep
    them at that gain. Not fitted (but said): size.fit_stages=false, or a stage list of the user's own."""
    spec, (cap, cap_words) = cfg.size, budget
    configured = tuple(cfg.stages)
    lists = stage_lists(configured) if not math.isinf(cap) else [configured]

    def costs_of(stages: tuple[str, ...]) -> Costs:
        return tune_costs(priced_stages(cfg, base, stages, quantized), shared)

    # w4a4 runs nothing for a model without a quantised variant: the shorter lists leave it out there.
    lists[1:] = [tuple(s for s in lst if s != "w4a4" or quantized) for lst in lists[1:]]
    first = costs_of(configured)
    if math.isinf(cap) or len(lists) == 1:
        return StageFit(configured, first, math.nan, False)
    gains = [gain_within(noise, first, spec, cap, shared)]
    if gains[0] <= spec.min_gain:  # the stages as they are see the gain asked for
        return StageFit(configured, first, gains[0], False)
    all_costs = [first]
    for stages in lists[1:]:
        all_costs.append(costs_of(stages))
        gains.append(gain_within(noise, all_costs[-1], spec, cap, shared))
    why_kept = ""
    if not spec.fit_stages:
        at, why_kept = 0, "size.fit_stages=false"
    elif configured != STAGES:
        at, why_kept = 0, "stages= given"
    else:
        at = fitted(gains)
    seen = [f"stages {','.join(configured)} see {gain_words(gains[0])}"]
    for stages, gain_seen in zip(lists[1:], gains[1:], strict=True):
        seen.append(f"without {left_out_words(configured, stages)} {gain_words(gain_seen)}")
    console.print(f"tune size: within {cap:g} GPU-hours ({cap_words}), at {spec.power:.0%} power by the "
                  f"formula: {'; '.join(seen)} ({spec.min_gain:+.0%} asked: size.min_gain)")  # fmt: skip
    chosen, gain = lists[at], gains[at]
    if why_kept:
        best = fitted(gains)
        shorter = left_out_words(configured, lists[best])
        better = f"; without {shorter} it would see {gain_words(gains[best])}" if best != at else ""
        console.print(f"tune size: stages kept as configured ({why_kept}){better}")
    elif chosen == configured:
        console.print("tune size: every stage kept: no shorter list sees a smaller gain within the budget")
    else:
        console.print(
            f"tune size: runs stages {','.join(chosen)}: {left_out_words(configured, chosen)} left out (they "
            "refine the drafting lever's K at launches of their own every repeat; without them the tune sees "
            "the smallest gain within the budget)"
        )
        return StageFit(chosen, all_costs[at], gain, True, first)
    return StageFit(chosen, all_costs[at], gain, True)


def kept_words(
    cfg: TuneConfig,
    fit: StageFit,
    noise: Noise,
    design_gain: float,
    runs: int,
    priced_runs: int,
    shared: bool,
) -> str:
    """The line that says what budget would keep the stages the fit left out: at the chosen design's gain
    and anchor runs (the configured list's cheapest design there, by the formula; with fit_stages off, as
    the fit would drop them again where the shorter list then sees a smaller gain), and the budget from
    which the fit keeps them (where the configured list sees size.min_gain)."""
    assert fit.configured_costs is not None

    def budget(design: Design | None) -> str:
        return "" if design is None else f"size.budget_gpu_h={math.ceil(design.gpu_h * 10) / 10:g}"

    spec = cfg.size
    full = fit.configured_costs.with_anchor_runs(runs, priced_runs)
    same = cheapest_design(design_gain, noise, full, spec, shared)
    need = f"more than {MAX_LAUNCHES_WORDS}"
    if same is not None:
        need = f"~{same.gpu_h:.2f} GPU-hours by the formula ({budget(same)} size.fit_stages=false)"
    every = cheapest_design(spec.min_gain, noise, fit.configured_costs, spec, shared)
    fit_keeps = (f"the fit keeps them from {budget(every)} (where every stage sees {pct(spec.min_gain)})"
                 if every else "no budget keeps them in the fit at this noise")  # fmt: skip
    return (
        f"tune size: keeping {left_out_words(cfg.stages, fit.stages)} at {pct(design_gain)} ({runs} anchor "
        f"runs) takes {need}; {fit_keeps}"
    )


def saved_sizing(path: Path) -> dict:
    """sizing.json as a tune wrote it; ConfigError where it is not one."""
    try:
        record = json.loads(path.read_text())
        Design(**record["design"]).words()
        list(record["grid_overrides"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a sizing this tune wrote ({type(exc).__name__}: {exc}); "
                          "delete it to size the stages again") from exc  # fmt: skip
    return record


def size_stages(cfg: TuneConfig, model: ModelSpec, console: Console) -> Sizing:
    """The grid overrides that size the stages and the stages the tune runs (experiments/tune_size.py),
    said on the console; no overrides and the configured stages where the user fixed grid.repeats (its
    power is said) or size.auto is off. Within a budget (size.budget_gpu_h, else size.budget_gpu_h_per_gpu
    x the model's tp on GPU engines) the stage list is fitted first (fit_stages). Raises ConfigError,
    before anything is launched, when the budget cannot see a useful gain.

    The first sizing of a tune is kept in out_dir/<model>/sizing.json, its stage list with it, and reused
    when the tune is run again to resume (a store that grew would otherwise resize the stages under
    finished cells, or fit another list)."""
    spec = cfg.size
    if not spec.auto:
        return Sizing([], list(cfg.stages))
    for name, value in (("min_gain", spec.min_gain), ("useful_gain", spec.useful_gain)):
        if not value > 0:
            raise ConfigError(f"size.{name}={value}: give a gain above 0, e.g. size.{name}=0.1 for +10 %")
    if not 0 < spec.power < 1:
        raise ConfigError(f"size.power={spec.power}: give a probability between 0 and 1, e.g. 0.8")
    if spec.budget_gpu_h is not None and not spec.budget_gpu_h > 0:
        raise ConfigError(f"size.budget_gpu_h={spec.budget_gpu_h}: give GPU-hours above 0, null (2 per GPU "
                          "of the model's engine: size.budget_gpu_h_per_gpu) or inf (no cap)")  # fmt: skip
    if not spec.budget_gpu_h_per_gpu > 0:
        raise ConfigError(f"size.budget_gpu_h_per_gpu={spec.budget_gpu_h_per_gpu}: give GPU-hours above 0, "
                          "or inf (no cap)")  # fmt: skip
    saved = project_path(cfg.out_dir) / model.name / "sizing.json"
    base = stage_base(cfg, model.name)
    grid_cfg = compose_config(base)
    shared = grid_cfg.grid.engine_reuse == "shared"
    if not sets_repeats(cfg.grid_overrides) and saved.is_file():
        record = saved_sizing(saved)
        stages = list(record.get("stages", cfg.stages))  # a sizing from before the fit: the configured list
        words = Design(**record["design"]).words()
        console.print(f"tune size: {words} per stage, stages {','.join(stages)}, as sized when this "
                      f"tune started ({saved}; delete it to size again)")  # fmt: skip
        return Sizing(list(record["grid_overrides"]), stages)
    store = store_path(grid_cfg.paths.store, grid_cfg.paths.get("store_options"))
    noise = noise_for(str(store), model.name, ["van", "suffix", "bestkpad", "dynk"], spec)
    console.print(f"tune size: noise {noise.sd_launch:.1%} between launches, {noise.sd_block:.1%} block to "
                  f"block ({noise.source})")  # fmt: skip
    if sets_repeats(cfg.grid_overrides):
        costs = tune_costs(priced_stages(cfg, base, quantized=bool(model.quantized_variant)), shared)
        repeats = grid_cfg.grid.repeats
        launches = min(repeats, grid_cfg.grid.launches_per_argv or repeats) if shared else repeats
        blocks = max(1, repeats // max(1, launches))
        p = power_by_launch(spec.min_gain, noise, launches, blocks)
        given = Design(launches, blocks, math.nan, math.nan, math.nan).words()
        console.print(f"tune size: grid.repeats={repeats} as given ({given}): "
                      f"{p**spec.tests_on_path:.0%} power to deploy a real {spec.min_gain:+.0%} lever, "
                      f"~{costs.gpu_h(launches, blocks):.2f} GPU-hours")  # fmt: skip
        return Sizing([], list(cfg.stages))
    budget = tune_budget(spec, model.tp if grid_cfg.ray.use_gpus else 0)
    fit = fit_stages(cfg, base, noise, shared, budget, bool(model.quantized_variant), console)
    costs, cap_h = fit.costs, budget[0]
    design = cheapest_design(spec.min_gain, noise, costs, spec, shared)
    gain, cap = spec.min_gain, math.inf
    if design is None or design.gpu_h > cap_h:
        within = detectable_gain(noise, costs, spec, cap_h, shared) if not math.isinf(cap_h) else None
        need = f"{design.gpu_h:.2f} GPU-hours" if design else f"more than {MAX_LAUNCHES_WORDS}"
        if not math.isinf(cap_h) and (within is None or within[0] > spec.useful_gain):
            seen = "no gain at all" if within is None else f"only gains above {within[0]:+.0%}"
            raise ConfigError(
                f"{budget[1]}: at this noise the tune sees {seen} with {spec.power:.0%} power within "
                f"{cap_h:g} GPU-hours (stages {','.join(fit.stages)}; "
                f"size.useful_gain={spec.useful_gain:g}); "
                f"a {spec.min_gain:+.0%} lever needs {need}: raise the budget (size.budget_gpu_h), raise "
                "size.min_gain, or cut the noise first"
            )
        if within is not None:
            if not fit.said:
                console.print(f"tune size: within {cap_h:g} GPU-hours ({budget[1]}) the tune sees "
                              f"{within[0]:+.1%} at {spec.power:.0%} power "
                              f"({spec.min_gain:+.0%} needs {need})")  # fmt: skip
            (gain, design), cap = within, cap_h
    if design is None:
        raise ConfigError(
            f"at this noise no design up to {MAX_LAUNCHES_WORDS} sees a {spec.min_gain:+.0%} lever with "
            f"{spec.power:.0%} power: raise size.min_gain, or cut the noise first (make launch-noise)"
        )
    formula, runs = design, grid_cfg.grid.anchor.runs
    gate = cfg.rules.require_equivalence
    # The simulated tune runs this tune's stages (without the K sweep a gain has fewer chances to be kept)
    # and launches as its grid makes them (a drafting lever per corpus under grid.engine_reuse=auto).
    rate = functools.partial(
        simulated_deploy_rate, stages=fit.stages, engine_reuse=grid_cfg.grid.engine_reuse
    )
    design, simulated = verified_design(design, gain, noise, costs, spec, runs, gate, rate,
                                        max_gpu_h=cap)  # fmt: skip
    extra: list[str] = []
    if simulated < spec.power and runs < spec.anchor_runs_if_capped:
        more = spec.anchor_runs_if_capped
        with_more = costs.with_anchor_runs(more, runs)
        # Within a budget the anchors' launches leave fewer for the stages: the gain they see moves.
        again_gain, again = gain, cheapest_design(gain, noise, with_more, spec, shared)
        if again is None or again.gpu_h > cap:
            found = detectable_gain(noise, with_more, spec, cap, shared) if not math.isinf(cap) else None
            again_gain, again = found if found is not None else (gain, None)
        if again is not None:
            tried = verified_design(again, again_gain, noise, with_more, spec, more, gate, rate,
                                    max_gpu_h=cap)  # fmt: skip
            if tried[1] > simulated:
                moved = f" at {again_gain:+.1%}" if again_gain != gain else ""
                console.print(f"tune size: {runs} anchor runs cap the power at {simulated:.0%} (their "
                              f"band holds launch noise); grid.anchor.runs={more} reaches "
                              f"{tried[1]:.0%}{moved}")  # fmt: skip
                (design, simulated), formula, runs, gain = tried, again, more, again_gain
                extra = [f"grid.anchor.runs={more}"]
    checked = ""
    if not math.isnan(simulated):
        added = design.launches - formula.launches
        checked = (f"; {simulated:.0%} of {spec.verify_draws} tunes simulated through the tune's own code "
                   f"(drift band of {runs} anchor runs, equivalence gate) deployed it"
                   + formula_words(added))  # fmt: skip
        if simulated < spec.power:
            cure = "raise the budget (size.budget_gpu_h)" if not math.isinf(cap) else "raise size.min_gain"
            checked += f": SHORT of {spec.power:.0%}, {cure} or cut the noise (make launch-noise)"
    of_budget = "" if math.isinf(cap_h) else f" (budget {cap_h:g})"
    fitted_words = f" (stages {','.join(fit.stages)})" if fit.stages != tuple(cfg.stages) else ""
    console.print(f"tune size: {design.words()} per stage{fitted_words}, ~{design.gpu_h:.2f} GPU-hours for "
                  f"the tune{of_budget}: {design.power_path:.0%} power to deploy a real {pct(gain)} lever by "
                  f"the formula ({design.power_each:.0%} per test, {spec.tests_on_path} tests)"
                  f"{checked}")  # fmt: skip
    if fit.configured_costs is not None:
        console.print(
            kept_words(
                cfg,
                fit,
                noise,
                design_gain=gain,
                runs=runs,
                priced_runs=grid_cfg.grid.anchor.runs,
                shared=shared,
            )
        )
    saved.parent.mkdir(parents=True, exist_ok=True)
    record = {"design": dataclasses.asdict(design), "noise": dataclasses.asdict(noise), "gain": gain,
              "power": spec.power, "simulated": simulated, "stages": list(fit.stages),
              "configured_stages": list(cfg.stages),
              "budget_gpu_h": None if math.isinf(cap_h) else cap_h}  # fmt: skip
    record["grid_overrides"] = [*design_overrides(design, shared), *extra]
    saved.write_text(json.dumps(record, indent=1))
    return Sizing(record["grid_overrides"], list(fit.stages))


def writable_out_dir(out_dir: str, model_name: str) -> Path:
    """out_dir/<model>/, checked before any engine starts: the store's own write probe (a temp file,
    removed) in its nearest existing folder, so a tune whose outputs cannot be written (out_dir=/proc/x,
    a read-only or full disk, a file in the way) is refused at once, not after hours; no folder is made."""
    folder = project_path(out_dir) / model_name
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        write_probe(existing)
    except OSError as exc:
        raise ConfigError(
            f"out_dir={out_dir}: {existing} is not writable ({exc.strerror or type(exc).__name__}); "
            "point out_dir at a writable folder (default results/tune)"
        ) from None
    return folder


def tune(overrides: list[str], console: Console | None = None, replay: bool = False) -> int:
    """Run the procedure (or, with replay, re-decide from a store that holds one tune's cells)."""
    cfg = compose_tune(overrides)
    grid_cfg = compose_config([f"experiment={cfg.experiment}", *cfg.grid_overrides])
    model = catalog_of(grid_cfg).load(ModelSpec, cfg.model)
    if not replay:
        writable_out_dir(cfg.out_dir, model.name)
    # Before sizing, which simulates hundreds of tunes: a tune that cannot run is refused at once.
    if not replay and not grid_cfg.grid.anchor.enabled:
        raise ConfigError(
            f"experiment '{cfg.experiment}' turns the drift anchor off (grid.anchor.enabled=false), and the "
            "tune keeps a change only beyond the drift band the anchor measures (unknown drift is never a "
            """keep): add 'grid_overrides=["grid.anchor.enabled=true"]'"""
        )
    if not replay:
        sizing = size_stages(cfg, model, console or make_console())
        cfg.stages = sizing.stages  # the stage list fitted to the budget (sizing.json keeps it for a resume)
        if sizing.grid_overrides:
            cfg.grid_overrides = [*cfg.grid_overrides, *sizing.grid_overrides]
            grid_cfg = compose_config([f"experiment={cfg.experiment}", *cfg.grid_overrides])
    if not replay and grid_cfg.grid.repeats < 2 and not grid_cfg.grid.sequential.enabled:
        raise ConfigError(
            f"the stages run grid.repeats={grid_cfg.grid.repeats}: a stage keeps a change only when its "
            "interval over repeats clears the drift band, which needs at least 2 repeats (3 or more to "
            """clear the noise); add 'grid_overrides=["grid.repeats=3"]'"""
        )
    t = Tune(cfg, model, new_session_id(), console or make_console(), replay=replay)
    final = procedure(t)
    confirmation = confirm(t, final)
    out = write_outputs(t, final, confirmation)
    deployed, why = deployment(t, final, confirmation)
    t.console.print(f"tune: deploy {deployed.label}: {why}; config, command and decision log in {out}")
    if note := unconfirmed_note(t):
        t.console.print(note.replace("**", ""))
    return 0


USAGE = """usage: python -m experiments.tune model=<name> [key=value ...]

The study's procedure for one model: van -> suffix -> K-pad -> best K -> W4A4 -> dynamic K ->
confirmation, each stage a grid run; writes final.yaml, serve.sh and decisions.md under out_dir/<model>/.

examples (a stage decides on an interval over repeats: at least 2, 3 or more to clear the noise;
the drift anchor must be on):
  python -m experiments.tune model=tiny 'grid_overrides=["grid.repeats=3","grid.anchor.enabled=true"]'
  python -m experiments.tune model=tiny corpora=[code_complete,chat_bench] confirm_repeats=5 \
      'grid_overrides=["grid.repeats=3","grid.anchor.enabled=true","paths.store=/tmp/tune"]'

duration (an estimate from `make demo`'s 6 runs in 10 min 10 s on 2 cores, ~1.7 min a run, not a
measured tune): each stage runs van, the incumbent and the candidate on every corpus x repeat plus
2 anchor runs; at 3 repeats on 2 corpora about 110 runs for van, suffix, K-pad, the K sweep, dynamic
K and the confirmation (no W4A4 without a quantised variant): some 3 hours on the CPU engine.
`python -m grid plan` prices one stage's grid on a GPU cluster. On GPU engines the tune sizes itself
within 2 GPU-hours per GPU of the model (size.budget_gpu_h_per_gpu; size.budget_gpu_h=N caps at N,
=inf not at all), leaving out dynamic K, then the K sweep, where they do not fit (size.fit_stages).

keys (conf/tune/tune.yaml, schema TuneConfig in experiments/tune_procedure.py): {keys}
docs/tune.md, section 'Tuning a model: `python -m experiments.tune`'."""


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):  # Hydra would answer with a lexer error
        from dataclasses import fields

        print(USAGE.format(keys=", ".join(f.name for f in fields(TuneConfig))))
        return 0
    try:
        return tune(argv)
    except GridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

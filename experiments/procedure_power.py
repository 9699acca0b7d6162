"""Error rates of the whole tuning procedure, simulated through experiments.tune's own code.

`python -m experiments.procedure_power` (the second part of `make power`).

analysis.power measures one keep/drop test. What a user lives with is the
procedure's rate: `experiments.tune` runs 4-5 sequential keep/drop stages and a
best-K pick, then a confirmation, and deploys one configuration. Here every
stage, decision and the deploy rule are the real ones (experiments.tune's
procedure, confirm and deployment; experiments.decide's rules;
analysis.decision's interval; analysis.drift's band; analysis.medians): only
the measurements are drawn. SimulatedTune replaces the two methods that touch
engines and the store, `stage` (run a grid) and `evidence` (read it back), with
analysis.simulated_sessions.SimulatedSessions'.

The noise model (lognormal per run, a session offset, a drift between each session's anchors,
a launch term) is analysis/simulated_sessions.py's; its module doc states it.

The equivalence gate: off in a row whose `gate` is None (rules.require_equivalence=false: every
lever simulated is lossless, so these rows are about speed decisions alone); on in a row with a
GateModel, as the tune runs it: every stage session draws a verdict per measured lever, K and
corpus (an identical lever's pass rate is the gate's power, analysis.equivalence_power), and the
tune's own rule (experiments.decide, analysis.gate) reads the latest. Scenarios: `null` (no lever
changes anything: every non-van deploy is a false deploy) and `+g` (every drafting lever,
suffix / bestkpad / dynk at any K, is g faster; w4a4 is not: a right deploy is a drafting
lever).

Draws: every row and scenario draws from a seed of its own (row_seed: the base seed and the
row's and scenario's names), each simulated tune from its own child of it, so a row's figures
depend neither on which other rows ran nor on how many processes ran them (--workers).
"""

from __future__ import annotations

import argparse
import functools
import math
import multiprocessing
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from rich.console import Console

from analysis.simulated_sessions import (
    DEFAULT_GATE,
    GATE_ON,
    H200_LAUNCHES,
    NOISES,
    SEED,
    GateModel,
    ProcedureNoise,
    SimulatedSessions,
)
from experiments.decide import KEEP, Decision, TuneRules
from experiments.tune_procedure import STAGES, Tune, TuneConfig, confirm, deployment, procedure
from experiments.tune_size import Noise as SizedNoise
from grid.config.catalog import CONF_DIR, load_spec
from vocab.schema import EquivalenceConfig, LeverSpec, ModelSpec

DRAFTING = ("suffix", "bestkpad", "dynk")
# The levers the tune's grid launches once per corpus in a repeat: grid.engine_reuse=auto (the tune's
# and every shipped experiment's default but the shared ones) gives each lever that drafts from the
# engine's history an engine per corpus (grid/config/expand.py fresh_per_corpus), so each of their
# cells has a launch term of its own and a launch to pay for (tests/unit/experiments: the grid's).
CORPUS_LAUNCH_LEVERS = DRAFTING


def corpus_launch_levers(engine_reuse: str) -> tuple[str, ...]:
    """The levers a grid with `engine_reuse` launches once per corpus (grid/config/expand.py
    fresh_per_corpus): the drafting levers under auto, every lever under per_corpus, none under
    per_spec or shared (one launch serves every corpus of its repeat)."""
    return {"auto": CORPUS_LAUNCH_LEVERS, "per_corpus": ("van", "w4a4", *CORPUS_LAUNCH_LEVERS)}.get(
        engine_reuse, ()
    )


MAX_FALSE_DEPLOY = 0.05
MIN_POWER = 0.80
# Processes that draw the tunes (each draws from its own seed: the figures do not depend on it).
WORKERS = os.cpu_count() or 1


@functools.cache
def _shipped_lever(name: str) -> LeverSpec:
    return load_spec(LeverSpec, name, CONF_DIR)


class _ShippedLevers:
    """What procedure() asks the catalog for (the dynk lever), from the shipped conf/lever files, read
    once: a copy of its K set here had drifted from conf/lever/dynk.yaml (4 where tune uses 12)."""

    def load(self, kind: type, name: str) -> LeverSpec:
        return _shipped_lever(name)


_LEVERS = _ShippedLevers()


@dataclass
class SimulatedTune(SimulatedSessions, Tune):
    """A Tune whose stages draw measurements from the noise model instead of running engines
    (analysis/simulated_sessions.py: its stage and evidence replace the ones that run a grid and read
    a store)."""

    @property
    def catalog(self) -> _ShippedLevers:  # type: ignore[override]
        return _LEVERS

    def record(self, decision: Decision) -> None:
        self.decisions.append(decision)  # no console: thousands of tunes

    @property
    def gate_cfg(self) -> EquivalenceConfig:  # type: ignore[override]
        """The thresholds the simulated gate judges with: the tune's pooled looks use them too."""
        return self.gate.gate_cfg if self.gate is not None else DEFAULT_GATE


@dataclass(frozen=True)
class Outcome:
    deployed: str  # the deployed lever
    candidate: str  # the procedure's choice before the confirmation
    kept_stages: int  # how many stage decisions were keeps
    confirm_lo: float  # the confirmation's interval (NaN when none ran)
    confirm_hi: float
    launches: int = 0  # engine launches of the whole tune's measured cells
    solo_launches: int = 0  # and of its anchors and replicates (one cell each)
    corpus_launches: int = 0  # and of one corpus's cell of a lever in CORPUS_LAUNCH_LEVERS


def tune_config(
    paired: bool = True,
    stages: Sequence[str] = STAGES,
    confirm_repeats: int | None = None,
    corpora: Sequence[str] = ("code_complete", "chat_bench"),
    gate: bool = False,
) -> TuneConfig:
    """The tune's defaults (conf/tune/tune.yaml), as the simulation runs them; the gate off unless `gate`."""
    return TuneConfig(
        model="sim",
        corpora=list(corpora),
        stages=list(stages),
        paired_stages=paired,
        confirm_repeats=confirm_repeats,
        rules=TuneRules(require_equivalence=gate),
    )


def simulate_once(
    cfg: TuneConfig,
    model: ModelSpec,
    noise: ProcedureNoise,
    effects: Mapping[str, float],
    repeats: int,
    rng: np.random.Generator,
    gate: GateModel | None = None,
    anchor_runs: int = 2,
    per_corpus: tuple[str, ...] = CORPUS_LAUNCH_LEVERS,
) -> Outcome:
    """One whole tune through experiments.tune's procedure, confirm and deployment; `per_corpus` the
    levers launched once per corpus (by default the tune's grid.engine_reuse=auto's)."""
    t = SimulatedTune(cfg, model, "sim", Console(quiet=True), noise=noise, effects=effects, rng=rng,
                      repeats=repeats, gate=gate, anchor_runs=anchor_runs,
                      corpus_launch_levers=per_corpus)  # fmt: skip
    final = procedure(t)
    confirmation = confirm(t, final)
    deployed, _ = deployment(t, final, confirmation)
    kept = sum(d.decision == KEEP for d in t.decisions)
    lo = confirmation.ci_lo if confirmation is not None else math.nan
    hi = confirmation.ci_hi if confirmation is not None else math.nan
    return Outcome(deployed.lever, final.lever, kept, lo, hi, t.launches, t.solo_launches, t.corpus_launches)


def row_seed(seed: int, *names: str) -> np.random.SeedSequence:
    """The seed of one row and scenario: the base seed and their names, so no two rows share draws."""
    return np.random.SeedSequence([seed, *(zlib.crc32(name.encode()) for name in names)])


def children(seed: np.random.SeedSequence | int, n: int) -> list[np.random.SeedSequence]:
    """The first n children of `seed`, the same however often asked (SeedSequence.spawn counts on)."""
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return [
        np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, i), pool_size=root.pool_size)
        for i in range(n)
    ]


def pool_map(fn: Callable, tasks: Sequence, workers: int = WORKERS) -> list:
    """fn over tasks, in `workers` forked processes (in order; one process: here)."""
    if workers <= 1 or len(tasks) < 2:
        return [fn(task) for task in tasks]
    with multiprocessing.get_context("fork").Pool(min(workers, len(tasks))) as pool:
        return pool.map(fn, tasks, chunksize=max(1, len(tasks) // (8 * workers)))


def _simulate_task(task: tuple) -> Outcome:
    cfg, model, noise, effects, repeats, seed, gate, anchor_runs, per_corpus = task
    rng = np.random.default_rng(seed)
    return simulate_once(cfg, model, noise, effects, repeats, rng, gate, anchor_runs, per_corpus)


@dataclass(frozen=True)
class Row:
    noise: str
    w4a4: bool
    n: int
    false_deploy: float  # null scenario: a non-van configuration deployed
    false_candidate: float  # null: the procedure chose a non-van one (deployed without the confirmation)
    power_10: float  # +10 % on every drafting lever: a drafting lever deployed
    power_20: float
    coverage: float  # +10 %: confirmation intervals that hold the true ratio 1.10
    draws: int
    gate: str = "off"
    launches: float = math.nan  # mean engine launches per tune (+20 % scenario), anchors included
    gpu_hours: float = math.nan  # mean GPU-hours per tune (+20 %), priced as grid plan does (LaunchCosts)
    power_draws: int = 0
    anchor_runs: int = 2
    power_40: float = math.nan  # +40 % on every drafting lever (issue 44: deployed >= 95 %)

    @property
    def meets(self) -> bool:
        return self.false_deploy <= MAX_FALSE_DEPLOY


def _effects(gain: float) -> dict[str, float]:
    return dict.fromkeys(DRAFTING, gain)


def outcomes(
    noise: ProcedureNoise,
    effects: Mapping[str, float],
    n: int,
    draws: int,
    seed: np.random.SeedSequence | int = SEED,
    w4a4: bool = False,
    cfg: TuneConfig | None = None,
    gate: GateModel | None = None,
    workers: int = WORKERS,
    anchor_runs: int = 2,
    per_corpus: tuple[str, ...] = CORPUS_LAUNCH_LEVERS,
) -> list[Outcome]:
    """`draws` whole tunes under `noise` with the true `effects`, at n repeats per stage, each from its
    own child of `seed` (`per_corpus`: simulate_once's)."""
    cfg = cfg or tune_config(gate=gate is not None)
    model = ModelSpec(name="sim", path="sim", quantized_variant="sim-nvfp4" if w4a4 else None)
    tasks = [
        (cfg, model, noise, dict(effects), n, s, gate, anchor_runs, per_corpus) for s in children(seed, draws)
    ]
    return pool_map(_simulate_task, tasks, workers)


def row_name(noise: ProcedureNoise, n: int, w4a4: bool, gate: GateModel | None, anchor_runs: int = 2) -> str:
    return f"{noise.name} | w4a4 {w4a4} | n {n} | gate {gate.name if gate else 'off'} | anchors {anchor_runs}"


@dataclass(frozen=True)
class LaunchCosts:
    """GPU-hours of one measured launch (van's cells of one repeat on both corpora) and of one launch
    of a single cell (an anchor), as `grid plan` prices them (grid/plan/cost.py) for `overrides`."""

    measured_h: float
    solo_h: float
    overrides: tuple[str, ...]
    # One corpus's cell of a lever on its own launch (CORPUS_LAUNCH_LEVERS): what a drafting lever
    # adds to a repeat, over the corpora, as `grid plan` prices it; NaN where not priced.
    corpus_h: float = math.nan

    def tune_hours(self, o: Outcome) -> float:
        corpus = o.corpus_launches * self.corpus_h if o.corpus_launches else 0.0
        return o.launches * self.measured_h + o.solo_launches * self.solo_h + corpus


# SmolLM2 (model tiny) on one H200 as gpu_validate loads it, at the H200 tune's measured van rate
# and warm engine start (docs/benchmarks/2026-12-01-h200-tune.md: 10,165 tok/s, ~65 s).
H200_PLAN = ("experiment=gpu_validate", "grid.models=[tiny]", "grid.levers=[van]", "grid.anchor.enabled=true",
             "+plan.rates.tiny=10165", "plan.engine_start_s=65", "cluster=device_h200")  # fmt: skip


def launch_costs(overrides: Sequence[str] = H200_PLAN) -> LaunchCosts:
    from grid.config.compose import compose_config
    from grid.config.expand import to_config
    from grid.plan.hours import gpu_hours_at

    cells_h, anchors_h = gpu_hours_at(list(overrides), 1)
    # A drafting lever's cells of one repeat, over van's: two repeats less one, so the gate's van
    # replicates (repeat 0 only) are not counted in; split over the grid's corpora.
    drafting = [*(o for o in overrides if not o.startswith("grid.levers=")), "grid.levers=[van,suffix]",
                "+grid.ks.suffix=[8]"]  # fmt: skip
    per_repeat_h = gpu_hours_at(drafting, 2)[0] - gpu_hours_at(drafting, 1)[0]
    corpora = len(to_config(compose_config(list(overrides))).grid.corpora)
    return LaunchCosts(cells_h, anchors_h / 2, tuple(overrides), (per_repeat_h - cells_h) / corpora)


# The simulation's terms the store does not size (analysis/simulated_sessions.py: H200_LAUNCHES's).
SIM_DRIFT, SIM_SESSION = 0.02, 0.05


def sized_model(noise: SizedNoise) -> ProcedureNoise:
    """The noise model a sizing's simulated tunes run under: van's launch sd (the anchor's runs are van
    launches) and each other lever's own where the store measured them, else sd_launch for all."""
    by_lever = dict(noise.lever_launch)
    launch = by_lever.pop("van", noise.sd_launch)
    if launch <= 0 and by_lever:  # ProcedureNoise draws per-lever launches only with a launch term
        launch = 1e-9
    return ProcedureNoise(
        "sized", noise.sd_block, noise.sd_block, SIM_DRIFT, SIM_SESSION, launch, tuple(by_lever.items())
    )


def simulated_deploy_rate(
    gain: float,
    noise: SizedNoise,
    launches: int,
    anchor_runs: int,
    gate: bool,
    draws: int,
    seed: int = 44,
    stages: Sequence[str] = STAGES,
    engine_reuse: str = "auto",
) -> float:
    """How often whole simulated tunes (experiments.procedure_power: the tune's own stages, decisions,
    drift band, equivalence gate and deploy rule) deploy a drafting lever that is `gain` faster, at
    `launches` repeats per stage (a launch each), under `noise`, running `stages` (the tune's), with
    the launches its grid's `engine_reuse` makes (corpus_launch_levers)."""
    model = sized_model(noise)
    cfg = tune_config(stages=stages, gate=gate)
    found = outcomes(model, dict.fromkeys(DRAFTING, gain), launches, draws, seed, cfg=cfg,
                     gate=GATE_ON if gate else None, anchor_runs=anchor_runs,
                     per_corpus=corpus_launch_levers(engine_reuse))  # fmt: skip
    return sum(o.deployed in DRAFTING for o in found) / draws


def procedure_row(
    noise: ProcedureNoise,
    n: int,
    draws: int,
    seed: int = SEED,
    w4a4: bool = False,
    cfg: TuneConfig | None = None,
    gate: GateModel | None = None,
    workers: int = WORKERS,
    power_draws: int | None = None,
    costs: LaunchCosts | None = None,
    anchor_runs: int = 2,
) -> Row:
    """The procedure's rates under `noise` at n repeats per stage, from `draws` simulated tunes where
    nothing works and `power_draws` (default: draws) per gain scenario, each scenario from a seed of
    its own (row_seed)."""
    name = row_name(noise, n, w4a4, gate, anchor_runs)
    if cfg is not None and tuple(cfg.stages) != STAGES:  # a row of other stages draws its own tunes
        name += f" | stages {','.join(cfg.stages)}"
    power_draws = power_draws or draws

    def run(scenario: str, gain: float, count: int) -> list[Outcome]:
        return outcomes(noise, _effects(gain) if gain else {}, n, count, row_seed(seed, name, scenario),
                        w4a4, cfg, gate, workers, anchor_runs)  # fmt: skip

    null = run("null", 0.0, draws)
    gain10, gain20 = run("+10%", 0.10, power_draws), run("+20%", 0.20, power_draws)
    gain40 = run("+40%", 0.40, power_draws)
    confirmed = [o for o in gain10 if not math.isnan(o.confirm_lo)]
    covered = sum(o.confirm_lo <= 1.10 <= o.confirm_hi for o in confirmed)
    return Row(
        noise.name,
        w4a4,
        n,
        sum(o.deployed != "van" for o in null) / draws,
        sum(o.candidate != "van" for o in null) / draws,
        sum(o.deployed in DRAFTING for o in gain10) / power_draws,
        sum(o.deployed in DRAFTING for o in gain20) / power_draws,
        covered / len(confirmed) if confirmed else math.nan,
        draws,
        gate.name if gate else "off",
        float(np.mean([o.launches + o.solo_launches + o.corpus_launches for o in gain20])),
        float(np.mean([costs.tune_hours(o) for o in gain20])) if costs else math.nan,
        power_draws,
        anchor_runs,
        sum(o.deployed in DRAFTING for o in gain40) / power_draws,
    )


def _stage_task(task: tuple) -> bool:
    noise, n, paired, effect, seed = task
    cfg = tune_config(paired=paired, stages=("van", "suffix"), corpora=("code_complete",))
    t = SimulatedTune(cfg, ModelSpec(name="sim", path="sim"), "sim", Console(quiet=True), noise=noise,
                      rng=np.random.default_rng(seed), repeats=n, effects={"suffix": effect})  # fmt: skip
    procedure(t)
    return any(d.stage == "suffix" and d.decision == KEEP for d in t.decisions)


def stage_keep(
    noise: ProcedureNoise,
    n: int,
    draws: int,
    paired: bool,
    effect: float = 0.0,
    seed: int = SEED,
    workers: int = WORKERS,
) -> float:
    """How often one stage (suffix vs van) keeps suffix, paired in one session or across sessions."""
    cell = row_seed(seed, noise.name, f"stage n {n}", f"paired {paired}", f"effect {effect}")
    kept = pool_map(_stage_task, [(noise, n, paired, effect, s) for s in children(cell, draws)], workers)
    return sum(kept) / draws


def procedure_table(rows: Sequence[Row]) -> str:
    lines = [
        "| noise | gate | w4a4 stage | n | anchor runs | launches per tune | GPU-h per tune "
        "| false deploy (nothing works) "
        "| chosen before confirmation | deploys a drafting lever at +10% | at +20% | at +40% "
        "| confirmation interval covers 1.10 | meets |",
        "|---|---|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.noise} | {r.gate} | {'yes' if r.w4a4 else 'no'} | {r.n} | {r.anchor_runs}"
            f" | {r.launches:.0f} | {r.gpu_hours:.1f} | {r.false_deploy:.1%} | {r.false_candidate:.1%}"
            f" | {r.power_10:.1%} | {r.power_20:.1%} | {r.power_40:.1%} | {r.coverage:.1%}"
            f" | {'yes' if r.meets else 'no'} |"
        )
    return "\n".join(lines)


def stage_table(
    noise: ProcedureNoise,
    ns: Sequence[int],
    draws: int,
    gain: float = 0.10,
    seed: int = SEED,
    workers: int = WORKERS,
) -> str:
    lines = [
        f"One stage (suffix vs van), {noise.name}, {draws:,} draws per cell: how often suffix is kept",
        "",
        f"| n | paired, no effect | unpaired, no effect | paired, +{gain:.0%} | unpaired, +{gain:.0%} |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in ns:
        cells = [
            stage_keep(noise, n, draws, paired, effect, seed, workers)
            for effect in (0.0, gain)
            for paired in (True, False)
        ]
        lines.append(f"| {n} | " + " | ".join(f"{c:.1%}" for c in cells) + " |")
    lines += [
        "",
        "paired: van and suffix in one session on the same prompts (paired_stages=true, the default);",
        "unpaired: each in a session of its own (paired_stages=false): Welch's interval across the two",
        "sessions, the band the spread between their anchors; the offset between them costs the power.",
    ]
    return "\n".join(lines)


# A noise where the stages alone keep a null lever often (a lever 10 % noisy against a 1 % van and a
# small drift band): the confirmation's gate has work to do. tests/unit/experiments holds it.
STRESS = ProcedureNoise("stress (van 1%, lever 10%, drift 0.5%)", 0.01, 0.10, 0.005, 0.0)
# The stage table's noise: the default run-to-run figures with a 5 % offset between sessions.
OFFSET = ProcedureNoise("van 1%, lever 5%, drift 2%, session offset 5%", 0.01, 0.05, 0.02, 0.05)


@dataclass(frozen=True)
class RowSpec:
    """One row of `make power`'s procedure table: the noise, repeats per stage, w4a4, the gate."""

    noise: ProcedureNoise
    n: int = 5
    w4a4: bool = False
    gate: GateModel | None = None
    anchor_runs: int = 2


# Issue 44's target once the launch noise is cut: 5 % between launches (the drafting levers' target),
# the block term as the H200 measured it. It stands for the noise measured after issue 44's item 1,
# rounded up (docs/benchmarks/2026-12-06-h100-launch-noise.md: bestkpad's launch sd on one H100 3.9 %
# by the harness, on 4 launches, whose 90 % interval reaches ~9 %).
TARGET_LAUNCHES = ProcedureNoise(
    "target launches (launch 5%, block 10%), offset 5%", 0.10, 0.10, 0.02, 0.05, launch=0.05
)
# The noise measured after issue 44's item 1 as its point estimates: the harness's launch sd of
# bestkpad on one H100 (3.9 %, same slice, 4 launches) and its block sd (8.2 %, the harness window's,
# slice content included); the session's drift and offset as the other rows take them.
H100_MEASURED = ProcedureNoise(
    "H100 measured (launch 3.9%, block 8.2%), offset 5%", 0.082, 0.082, 0.02, 0.05, launch=0.039
)
# suffix's noise measured after issue 44's item 1 on one H100, pinned and warmed up with two full waves
# (docs/benchmarks/2026-12-07-h100-launch-noise-item1.md, 4 launches per setting): the harness's launch sd
# on the same slice (11.1 %, df 4) and its window's block sd (8.0 %), taken as every arm's: the drafting
# levers' comparisons pair suffix with van or bestkpad, and suffix is the noisiest of the levers measured.
# (On its first 3 launches it read 14.3 % and 9.3 %: docs/benchmarks/2026-12-07-h100-suffix-launch-noise.md.)
H100_SUFFIX_MEASURED = ProcedureNoise(
    "H100 suffix measured (launch 11.1%, block 8.0%), offset 5%", 0.080, 0.080, 0.02, 0.05, launch=0.111
)
# Each lever's own launch term as measured on one H100 after issue 44's item 1 (pinned, two full waves of
# warm-up): van's 6.4 % (docs/benchmarks/2026-12-07-h100-van-launch-noise.md, the harness on the same
# slice, both settings pooled: they run van at one level, df 12; the anchor's runs are van launches),
# suffix's 11.1 % (df 4) and bestkpad's 3.9 % (2026-12-06, df 4); the block term suffix's 8.0 % for all.
# The tune sizes with one sigma (size.sd_launch); given the noisiest lever's it sizes the design of
# H100_SUFFIX_MEASURED: this row says what that design does when the other levers are quieter.
H100_PER_LEVER_MEASURED = ProcedureNoise(
    "H100 per lever measured (launch van 6.4%, suffix 11.1%, bestkpad 3.9%; block 8.0%), offset 5%",
    0.080, 0.080, 0.02, 0.05, launch=0.064, lever_launch=(("suffix", 0.111), ("bestkpad", 0.039)),
)  # fmt: skip
# The designs experiments/tune_size.py sizes for a real +20 % (size.min_gain=0.2, the gpu_validate
# plan on one H200, size.verify_draws=300, the pooled gate): (launches per stage, anchor runs) per noise.
SIZED_20 = {TARGET_LAUNCHES.name: (7, 9), H200_LAUNCHES.name: (11, 9), H100_MEASURED.name: (6, 9)}
# Designs beside the sized one at issue 44's target noise (launches per stage, anchor runs): fewer
# anchor runs, and fewer anchor runs bought back with a launch more, so the table shows the cheapest
# that meets issue 44's targets and what it costs.
DESIGNS_44 = ((7, 7), (8, 5))
ISSUE_44_NOISES = (TARGET_LAUNCHES.name, H100_MEASURED.name)
# Issue 44: deployed at +20 % >= 80 % and at +40 % >= 95 %, within 2 GPU-hours per tune.
MIN_POWER_40 = 0.95
BUDGET_44_GPU_H = 2.0


def table_rows(repeats: int) -> list[RowSpec]:
    """The rows `make power` prints, the gate on as the tune runs it: the default noise and the H200's
    launches at `repeats` per stage and the anchor's default 2 runs, the H200 at the budgets that
    issue 37 asks for (+20 %, then +10 %, deployed >= 80 %): more repeats and 9 anchor runs, the
    designs the tune sizes itself for +20 % (SIZED_20) at the H200's launches, at issue 44's target and
    at the H100's measured noise, and the designs beside the target's (DESIGNS_44)."""
    sized = [
        RowSpec(noise, SIZED_20[noise.name][0], gate=GATE_ON, anchor_runs=SIZED_20[noise.name][1])
        for noise in (H200_LAUNCHES, TARGET_LAUNCHES, H100_MEASURED)
    ]
    beside = [
        RowSpec(TARGET_LAUNCHES, n, gate=GATE_ON, anchor_runs=runs)
        for n, runs in DESIGNS_44
        if (n, runs) != SIZED_20[TARGET_LAUNCHES.name]
    ]
    return [
        RowSpec(NOISES[0], repeats, gate=GATE_ON),
        RowSpec(H200_LAUNCHES, repeats, gate=GATE_ON),
        RowSpec(H200_LAUNCHES, 15, gate=GATE_ON, anchor_runs=9),
        RowSpec(H200_LAUNCHES, 45, gate=GATE_ON, anchor_runs=9),
        *sized,
        *beside,
    ]


def interval(share: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's 95 % interval for a share of n simulated tunes."""
    if n <= 0:
        return math.nan, math.nan
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def with_interval(share: float, n: int) -> str:
    """'84.4% [80.9, 87.4] of 500'."""
    lo, hi = interval(share, n)
    return f"{share:.1%} [{100 * lo:.1f}, {100 * hi:.1f}] of {n:,}"


def meets_44(r: Row) -> bool:
    """Issue 44's power targets and the false-deploy bound (the GPU-hours apart)."""
    return r.power_20 >= MIN_POWER and r.power_40 >= MIN_POWER_40 and r.meets


def issue_44_lines(rows: Sequence[Row]) -> list[str]:
    """Issue 44's targets against the sized rows and the designs beside them, each figure with its
    95 % interval, and the cheapest row at its target noise that meets the power targets."""
    lines = []
    for r in rows:
        sized = SIZED_20.get(r.noise) == (r.n, r.anchor_runs)
        if not (sized or (r.noise == TARGET_LAUNCHES.name and (r.n, r.anchor_runs) in DESIGNS_44)):
            continue
        within = r.gpu_hours <= BUDGET_44_GPU_H
        lines.append(
            f"target (issue 44): {r.noise}, n={r.n}, {r.anchor_runs} anchor runs"
            f"{' (the whole stage list as the tune sizes it for +20 %)' if sized else ''}:"
            f" +20 % {with_interval(r.power_20, r.power_draws)},"
            f" +40 % {with_interval(r.power_40, r.power_draws)}, false deploy"
            f" {with_interval(r.false_deploy, r.draws)}, {r.gpu_hours:.2f} GPU-h per tune:"
            f" {'met' if meets_44(r) and within else 'NOT met'}"
            + ("" if within else f" (above {BUDGET_44_GPU_H:g} GPU-h)")
            + ("" if meets_44(r) else " (power)")
        )
    for noise in ISSUE_44_NOISES:
        met = sorted((r for r in rows if r.noise == noise and meets_44(r)), key=lambda r: r.gpu_hours)
        if met:
            best = met[0]
            lines.append(
                f"target (issue 44): the whole stage list's cheapest row under {noise} that deploys"
                f" +20 % >= {MIN_POWER:.0%}"
                f" and +40 % >= {MIN_POWER_40:.0%}: n={best.n}, {best.anchor_runs} anchor runs, "
                f"{best.gpu_hours:.2f} GPU-h per tune, "
                + ("within" if best.gpu_hours <= BUDGET_44_GPU_H else "above")
                + f" the {BUDGET_44_GPU_H:g} GPU-h issue 44 allows"
            )
    return lines


# Issue 44's 2 GPU-hours: issue 44's noises with only the stages on a drafting lever's way to a deploy
# (suffix, kpad, the confirmation), at the designs experiments/tune_size.py sizes for them (+20 %,
# stages=[van,suffix,kpad,confirm]). The K sweep (van, the incumbent and four K) and dynk (van, the
# incumbent, dynk) are 9 of the 16 launches of each repeat of the whole tune. This is the default tune
# of a one-GPU model at these noises: within its default budget (size.budget_gpu_h_per_gpu, 2 GPU-hours
# per GPU) size.fit_stages leaves out dynk and best_k (experiments/tune.py fit_stages). Each row's design
# is the one the default tune sizes at that noise within 2 GPU-hours (tests/unit/experiments/
# test_tune_fit.py holds them to it; the per-lever row at its noisiest lever's sigma): 6 launches x 9
# anchor runs at all four, seeing +19.5 % at bestkpad's H100 noise, only +24.9 % at the target's and +40 %
# at suffix's H100 noise, so the last rows show what the budget costs there.
SHORT_STAGES = ("van", "suffix", "kpad", "confirm")
BUDGET_ROWS = (
    (H100_MEASURED, 5, 9),
    (TARGET_LAUNCHES, 5, 9),
    (H100_SUFFIX_MEASURED, 5, 9),
    (H100_PER_LEVER_MEASURED, 5, 9),
)


def budget_rows(draws: int, power_draws: int, seed: int, workers: int, costs: LaunchCosts) -> list[Row]:
    """BUDGET_ROWS' rows with stages SHORT_STAGES, the gate on (procedure_row; each its own draws)."""
    cfg = tune_config(stages=SHORT_STAGES, gate=True)
    return [
        procedure_row(
            noise,
            n,
            draws,
            seed,
            cfg=cfg,
            gate=GATE_ON,
            workers=workers,
            power_draws=power_draws,
            costs=costs,
            anchor_runs=runs,
        )
        for noise, n, runs in BUDGET_ROWS
    ]


def budget_table(rows: Sequence[Row]) -> str:
    """The budget rows with their intervals, and whether each meets issue 44 within its 2 GPU-hours."""
    lines = [
        f"Issue 44's {BUDGET_44_GPU_H:g} GPU-hours: the default tune on one GPU, fitted to its"
        f" {BUDGET_44_GPU_H:g} GPU-hours (size.fit_stages: stages {', '.join(SHORT_STAGES)}; no K sweep,"
        " no dynk), at the designs it sizes for +20 %, the gate on; Wilson 95 % intervals",
        "",
        "| noise | n | anchor runs | GPU-h per tune | false deploy (nothing works) | at +20% | at +40% "
        "| meets issue 44 |",
        "|---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        met = meets_44(r) and r.gpu_hours <= BUDGET_44_GPU_H
        lines.append(
            f"| {r.noise} | {r.n} | {r.anchor_runs} | {r.gpu_hours:.2f}"
            f" | {with_interval(r.false_deploy, r.draws)} | {with_interval(r.power_20, r.power_draws)}"
            f" | {with_interval(r.power_40, r.power_draws)}"
            f" | {'yes' if met else 'no'} |"
        )
    return "\n".join(lines)


def budget_target_lines(rows: Sequence[Row]) -> list[str]:
    """Issue 44's target against the default tune as it fits itself to a one-GPU model's budget (the
    budget rows): one line per noise."""
    return [
        f"target (issue 44): the default tune on one GPU (fitted to {BUDGET_44_GPU_H:g} GPU-h: stages"
        f" {', '.join(SHORT_STAGES)}) under {r.noise}, n={r.n}, {r.anchor_runs} anchor runs:"
        f" {'met' if meets_44(r) and r.gpu_hours <= BUDGET_44_GPU_H else 'NOT met'}"
        f" (+20 % {r.power_20:.1%}, +40 % {r.power_40:.1%}, false deploy {r.false_deploy:.1%},"
        f" {r.gpu_hours:.2f} GPU-h per tune)"
        for r in rows
    ]


def target_lines(rows: Sequence[Row]) -> list[str]:
    """Issue 37's targets against the rows: false deploy <= 5 % everywhere; a drafting lever worth +10 %
    (default noise) and +20 %, +10 % (the H200's launches) deployed >= 80 %, at the cheapest row that
    does it, else the best row and how far it falls short."""
    misses = [r for r in rows if not r.meets]
    lines = [
        f"target: false deploy <= {MAX_FALSE_DEPLOY:.0%} in every row: "
        + ("met" if not misses else "NOT met: " + "; ".join(f"{r.noise} n={r.n}" for r in misses))
    ]
    for noise, gain in ((NOISES[0].name, 0.10), (H200_LAUNCHES.name, 0.20), (H200_LAUNCHES.name, 0.10)):
        mine = [r for r in rows if r.noise == noise]
        power = {0.10: lambda r: r.power_10, 0.20: lambda r: r.power_20}[gain]
        if not mine:
            continue
        met = sorted((r for r in mine if power(r) >= MIN_POWER), key=lambda r: (r.gpu_hours, r.n))
        best = met[0] if met else max(mine, key=power)
        budget = (f"n={best.n} repeats per stage, {best.anchor_runs} anchor runs,"
                  f" {best.launches:.0f} launches, {best.gpu_hours:.1f} GPU-h per tune")  # fmt: skip
        verdict = "met" if met else f"NOT met, short by {MIN_POWER - power(best):.1%} at best"
        lines.append(
            f"target: +{gain:.0%} deployed >= {MIN_POWER:.0%} under {noise}: {verdict}"
            f" ({power(best):.1%} at {budget})"
        )
    return lines + issue_44_lines(rows)


def header(repeats: int, draws: int, power_draws: int, seed: int) -> str:
    """The table's first line, which docs/tune.md quotes (a test holds the two equal)."""
    return (
        "The whole tune (experiments.tune: suffix, kpad, best K over [4, 6, 8, 12], dynk, confirmation;"
        f" deploy only what the confirmation confirms), n repeats per stage ({repeats} unless the row"
        f" says), 2 corpora; {draws:,} simulated tunes per row where nothing works, {power_draws:,} per"
        f" gain; each row and scenario its own draws from seed {seed}:"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--draws", type=int, default=2000, help="simulated tunes where nothing works, per row"
    )
    parser.add_argument("--power-draws", type=int, default=500, help="simulated tunes per gain, per row")
    parser.add_argument("--repeats", type=int, default=5, help="grid.repeats of every stage")
    parser.add_argument("--stage-draws", type=int, default=400, help="draws per row of the stage table")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--workers", type=int, default=WORKERS, help="processes (the figures do not change)")
    args = parser.parse_args(argv)
    if min(args.draws, args.power_draws, args.stage_draws, args.workers) < 1 or args.repeats < 2:
        parser.error("--draws, --power-draws, --stage-draws and --workers >= 1, --repeats >= 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(header(args.repeats, args.draws, args.power_draws, args.seed) + "\n")
    costs = launch_costs()
    rows = [
        procedure_row(
            spec.noise,
            spec.n,
            args.draws,
            args.seed,
            spec.w4a4,
            gate=spec.gate,
            workers=args.workers,
            power_draws=args.power_draws,
            costs=costs,
            anchor_runs=spec.anchor_runs,
        )
        for spec in table_rows(args.repeats)
    ]
    print(procedure_table(rows))
    print(
        f"\nGPU-h: `grid plan` {' '.join(costs.overrides)}: {costs.measured_h:.4f} per launch of one"
        f" repeat's cells (both corpora), {costs.corpus_h:.4f} per drafting lever's launch of one corpus"
        f" (grid.engine_reuse=auto), {costs.solo_h:.4f} per anchor or replicate launch"
    )
    print()
    print("\n".join(target_lines(rows)))
    print()
    print(stage_table(OFFSET, (3, 5, 8, 12), args.stage_draws, seed=args.seed, workers=args.workers))
    print()
    budget = budget_rows(args.draws, args.power_draws, args.seed, args.workers, costs)
    print(budget_table(budget))
    print()
    print("\n".join(budget_target_lines(budget)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

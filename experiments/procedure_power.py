"""Error rates of the whole tuning procedure, simulated through experiments.tune's own code.

`python -m experiments.procedure_power` (the second part of `make power`).

analysis.power measures one keep/drop test. What a user lives with is the
procedure's rate: `experiments.tune` runs 4-5 sequential keep/drop stages and a
best-K pick, then a confirmation, and deploys one configuration. Here every
stage, decision and the deploy rule are the real ones (experiments.tune's
procedure, confirm and deployment; experiments.decide's rules;
analysis.decision's interval; analysis.drift's band; analysis.medians): only
the measurements are drawn. SimulatedTune replaces the two methods that touch
engines and the store, `stage` (run a grid) and `evidence` (read it back).

Noise model (lognormal, per run = per engine launch), per session (one tune stage):

    ln tok/s = ln(mu * (1 + effect(lever))) + O + D * t + L + e
    O ~ N(0, session^2)   one offset shared by every run of the session (between-session term)
    D ~ N(0, drift^2)     the session's drift from its start anchor (t = 0) to its end anchor (t = 1)
    L ~ N(0, launch^2)    one per engine launch: a lever at one K in one repeat is a launch
                          (grid.repeat_order=interleaved: launch = repeat), which serves every
                          corpus of that repeat, so its corpora share L; each anchor run is a
                          launch of its own. 0 in the rows that model every run as independent.
    e ~ N(0, van^2)       van and the anchor runs; N(0, lever^2) for every other lever: the run
                          to run term (with launch > 0: the block term inside one launch)
    runs in the grid's interleaved order: repeat r, then the levers (reversed on odd r), then corpora;
    run j of N measured runs at t = (j + 1) / (N + 1); the anchor's `anchor_runs` runs (grid.anchor.runs:
    start, mid1.., end) at t = i / (anchor_runs - 1), so with 3 or more the band is their trend
    (analysis.drift), with 2 their difference

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
import itertools
import math
import multiprocessing
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rich.console import Console

from analysis.drift import DRIFT_COLUMNS, session_drift, split_anchors, trend
from analysis.equivalence import FAIL, PASS
from analysis.equivalence_power import H200_INDEPENDENT, Floor, draw_verdicts
from analysis.medians import MEDIAN_COLUMNS, lever_medians
from experiments.decide import KEEP, Decision, TuneRules
from experiments.tune import STAGES, Tune, TuneConfig, confirm, deployment, procedure
from grid.catalog import CONF_DIR, load_spec
from vocab.schema import LeverSpec, ModelSpec

DRAFTING = ("suffix", "bestkpad", "dynk")
MAX_FALSE_DEPLOY = 0.05
MIN_POWER = 0.80
BASE_TOK_PER_S = 1000.0
SEED = 26
# Processes that draw the tunes (each draws from its own seed: the figures do not depend on it).
WORKERS = os.cpu_count() or 1
VERDICT_COLUMNS = ["session_id", "model", "lever", "k", "corpus", "verdict", "reason", "judged_at",
                   "floor_cell_key"]  # fmt: skip


@dataclass(frozen=True)
class ProcedureNoise:
    """Sigmas (log scale): run to run (the block term inside a launch where `launch` > 0), the
    within-session drift, the between-session offset and the engine launch's own term (module doc)."""

    name: str
    van: float
    lever: float
    drift: float
    session: float
    launch: float = 0.0


# analysis.power's default model, and the H200 tune of 2026-12-01's measured spread (SmolLM2 on
# one H200: van 11.8 %, suffix 14.7 % over 8 launches each) with a between-session offset.
NOISES = (
    ProcedureNoise("default (van 1%, lever 5%, drift 2%)", 0.01, 0.05, 0.02, 0.0),
    ProcedureNoise("H200 spread, session offset 2%", 0.118, 0.147, 0.02, 0.02),
    ProcedureNoise("H200 spread, session offset 5%", 0.118, 0.147, 0.02, 0.05),
)
# The H200's spread split as its launches hold it (issue 37): 11.8 % between launches, ~10 % block
# to block inside one launch; a launch serves both corpora of its repeat, so they share its term.
H200_LAUNCHES = ProcedureNoise(
    "H200 launches (launch 11.8%, block 10%), offset 5%", 0.10, 0.10, 0.02, 0.05, launch=0.118
)


@dataclass(frozen=True)
class GateModel:
    """How the equivalence gate judges a lossless lever on one corpus in one session.

    With a `floor`: analysis.equivalence_power.draw_verdicts, the gate's own judge_paired on prompts
    drawn from that floor (van's replicate disagreeing with van as the floor says), at the corpus's
    measured prompt count (`prompts`); without: pass with probability `pass_rate`, else fail.
    """

    name: str
    floor: Floor | None = None
    prompts: tuple[tuple[str, int], ...] = ()
    pass_rate: float = 1.0

    def verdict(self, rng: np.random.Generator, corpus: str) -> str:
        if self.floor is None:
            return PASS if rng.random() < self.pass_rate else FAIL
        return str(draw_verdicts(rng, 0.0, dict(self.prompts)[corpus], 1, self.floor)[0])


# The gate as the tune runs it on the H200 (gpu_short: 160 measured prompts of code_complete, 78 of
# chat_bench), its floor the independent one: the replicate changes each output on its own, the
# harder case for an identical lever (h200_measured's fragile prompts pass every time).
GATE_ON = GateModel(
    "on (h200_independent floor)", H200_INDEPENDENT, (("code_complete", 160), ("chat_bench", 78))
)


@functools.cache
def _shipped_lever(name: str) -> LeverSpec:
    return load_spec(LeverSpec, name, CONF_DIR)


class _ShippedLevers:
    """What procedure() asks the catalog for (the dynk lever), from the shipped conf/lever files, read
    once: a copy of its K set here had drifted from conf/lever/dynk.yaml (4 where tune uses 12)."""

    def load(self, kind: type, name: str) -> LeverSpec:
        return _shipped_lever(name)


_LEVERS = _ShippedLevers()


def _frame(columns: Mapping[str, list], order: Sequence[str]) -> pd.DataFrame:
    """A table of `columns`, text as Python objects: pandas' Arrow strings made the tune's row
    look-ups (experiments.decide, analysis.drift) twice as slow on tables of a few rows."""
    return pd.DataFrame(
        {
            name: np.array(values, dtype=object) if not values or isinstance(values[0], str) else values
            for name, values in columns.items()
        },
        columns=list(order),
    )


@functools.cache
def _no_verdicts() -> pd.DataFrame:
    # One empty table for every gate-off evidence: building it costs more than a simulated stage.
    return _frame({name: [] for name in VERDICT_COLUMNS}, VERDICT_COLUMNS)


@dataclass
class SimulatedTune(Tune):
    """A Tune whose stages draw measurements from the noise model instead of running engines."""

    noise: ProcedureNoise = NOISES[0]
    effects: Mapping[str, float] = field(default_factory=dict)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(SEED))
    rows: list[dict] = field(default_factory=list)
    sessions_run: int = 0
    repeats: int = 3  # grid.repeats of every stage
    anchors: dict[str, dict[str, float]] = field(default_factory=dict)  # session -> position -> tok/s
    # grid.anchor.runs: the anchor's runs per session, evenly across it (start, mid1.., end): with 3 or
    # more the band is the anchors' trend (analysis.drift), with 2 their difference.
    anchor_runs: int = 2
    gate: GateModel | None = None  # None: the gate is off (module doc)
    launches: int = 0  # engine launches of measured cells (each serves every corpus of its repeat)
    solo_launches: int = 0  # launches of one cell: the anchors, and van's replicates with the gate on
    verdict_rows: list[dict] = field(default_factory=list)
    _cells: dict[str, tuple[str, str, int, str, int, float]] = field(default_factory=dict)
    _cache: tuple | None = None
    _verdicts: tuple[int, pd.DataFrame] | None = None

    @property
    def catalog(self) -> _ShippedLevers:  # type: ignore[override]
        return _LEVERS

    def stage(
        self, name: str, levers: Mapping[str, Sequence[int]], *extra: str, seed: int | None = None
    ) -> set[str]:
        repeats = (
            self.cfg.confirm_repeats if name.startswith("confirm") and self.cfg.confirm_repeats else None
        )
        repeats = repeats or self.repeats
        session = f"{self.tune_id}-{name}-{self.sessions_run}"
        self.sessions_run += 1
        specs = [(lever, k) for lever, ks in levers.items() for k in (ks or [0])]
        corpora = self.cfg.corpora
        n_runs = repeats * len(specs) * len(corpora)
        offset = self.rng.normal(0.0, self.noise.session)
        drift = self.rng.normal(0.0, self.noise.drift)
        runs = self.anchor_runs
        anchor = self.rng.normal(0.0, self.noise.van, runs)
        if self.noise.launch > 0:  # each anchor run is a launch of its own
            anchor = anchor + self.rng.normal(0.0, self.noise.launch, runs)
        keys = set()
        j = 0
        for r in range(repeats):
            for lever, k in specs if r % 2 == 0 else specs[::-1]:
                # One launch per (lever, K, repeat) serves every corpus of the repeat.
                launch = self.rng.normal(0.0, self.noise.launch) if self.noise.launch > 0 else 0.0
                for corpus in corpora:
                    t = (j + 1) / (n_runs + 1)
                    j += 1
                    sigma = self.noise.van if lever == "van" else self.noise.lever
                    ln = math.log(1.0 + self.effects.get(lever, 0.0)) + offset + drift * t + launch
                    key = f"{session}/{lever}/{k}/{corpus}/{r}"
                    keys.add(key)
                    value = BASE_TOK_PER_S * math.exp(ln + self.rng.normal(0, sigma))
                    self._cells[key] = (corpus, lever, k, session, r, value)
                    self.rows.append(
                        {
                            "cell_key": key,
                            "model": self.model.name,
                            "corpus": corpus,
                            "lever": lever,
                            "k": k,
                            "session_id": session,
                            "repeat": r,
                            "valid": True,
                            "anchor": None,
                            "output_tok_per_s": value,
                        }
                    )
        self.launches += repeats * len(specs)
        self.solo_launches += runs
        positions = ["start", *(f"mid{i}" for i in range(1, runs - 1)), "end"]
        for i, (position, e) in enumerate(zip(positions, anchor, strict=True)):
            t = i / (runs - 1)
            value = BASE_TOK_PER_S * math.exp(offset + drift * t + e)
            self.anchors.setdefault(session, {})[position] = value
            self.rows.append(
                {
                    "cell_key": f"{session}/anchor/{position}",
                    "model": self.model.name,
                    "corpus": corpora[0],
                    "lever": "van",
                    "k": 0,
                    "session_id": session,
                    "repeat": 0,
                    "valid": True,
                    "anchor": position,
                    "output_tok_per_s": value,
                }
            )
        if self.gate is not None:  # the session's gate verdicts, one per lever, K and corpus
            self.solo_launches += len(corpora)  # van's replicate of repeat 0, a launch per corpus
            for lever, k in specs:
                if lever == "van":
                    continue
                for corpus in corpora:
                    verdict = self.gate.verdict(self.rng, corpus)
                    self.verdict_rows.append(
                        {"session_id": session, "model": self.model.name, "lever": lever, "k": k,
                         "corpus": corpus, "verdict": verdict, "reason": "simulated",
                         "judged_at": f"{self.sessions_run:04d}", "floor_cell_key": "simulated"}
                    )  # fmt: skip
        self.keys |= keys
        return keys

    def evidence(self, keys: set[str] | None = None) -> tuple:
        """What Tune.evidence reads from a store: medians per (corpus, lever, K) with their
        per-repeat values, each session's anchor drift, the verdicts. Built straight from the drawn
        cells (pandas' group-bys cost a simulated tune seconds); store_evidence gives the same
        tables through analysis.medians and analysis.drift, and a test holds the two equal."""
        wanted = keys if keys is not None else self.keys
        cache_key = (frozenset(wanted), len(self.rows), len(self.verdict_rows))
        if self._cache and self._cache[0] == cache_key:
            return self._cache[1]
        groups: dict[tuple[str, str, int], list[tuple[str, int, float]]] = {}
        for key in wanted:
            corpus, lever, k, session, r, value = self._cells[key]
            groups.setdefault((corpus, lever, k), []).append((session, r, value))
        sessions = sorted({s for cells in groups.values() for s, _, _ in cells})
        ordered = sorted(groups.items())
        medians = _frame(
            {
                "model": [self.model.name] * len(ordered),
                "corpus": [c for (c, _, _), _ in ordered],
                "lever": [lv for (_, lv, _), _ in ordered],
                "k": [k for (_, _, k), _ in ordered],
                "n": [len(cells) for _, cells in ordered],
                "median": [float(np.median([v for _, _, v in cells])) for _, cells in ordered],
                "mad": [math.nan] * len(ordered),
                "sessions": [tuple(sorted({s for s, _, _ in cells})) for _, cells in ordered],
                "repeats": [tuple(sorted(cells)) for _, cells in ordered],
            },
            MEDIAN_COLUMNS,
        )
        rows = [self._drift_row(s) for s in sessions]
        drift = _frame({name: [row[name] for row in rows] for name in DRIFT_COLUMNS}, DRIFT_COLUMNS)
        evidence = (medians, drift, self.verdicts())
        self._cache = (cache_key, evidence)
        return evidence

    def _drift_row(self, session: str) -> dict[str, object]:
        """analysis.drift.session_drift's row for one session's anchor runs (in time order)."""
        values = list(self.anchors[session].values())
        logs = [math.log(v) for v in values]
        mean = sum(values) / len(values)
        beta, se, df, bound = trend([i / (len(values) - 1) for i in range(len(values))], logs)
        return {
            "session_id": session,
            "model": self.model.name,
            "corpus": self.cfg.corpora[0],
            "lever": "van",
            "k": 0,
            "n_anchor_runs": len(values),
            "anchor_start_tok_per_s": values[0],
            "anchor_end_tok_per_s": values[-1],
            "anchor_mean_tok_per_s": mean,
            "drift_rel": (max(values) - min(values)) / mean,
            "n_anchor_pairs": len(values) - 1,
            "anchor_log_ss": sum((b - a) ** 2 for a, b in itertools.pairwise(logs)),
            "anchor_trend": beta,
            "anchor_trend_se": se,
            "anchor_trend_df": df,
            "trend_bound": bound,
        }

    def store_evidence(self, keys: set[str] | None = None) -> tuple:
        """The same tables through analysis.medians.lever_medians and analysis.drift.session_drift."""
        measured, anchors = split_anchors(pd.DataFrame(self.rows))
        measured = measured[measured["cell_key"].isin(keys if keys is not None else self.keys)]
        medians, _ = lever_medians(measured)
        anchors = anchors[anchors["session_id"].isin(set(measured["session_id"]))]
        drift, _ = session_drift(anchors)
        return medians, drift, self.verdicts()

    def verdicts(self) -> pd.DataFrame:
        """The stages' gate verdicts (none with the gate off: module doc)."""
        if not self.verdict_rows:
            return _no_verdicts()
        if self._verdicts is None or self._verdicts[0] != len(self.verdict_rows):
            self._verdicts = (
                len(self.verdict_rows),
                pd.DataFrame(self.verdict_rows, columns=VERDICT_COLUMNS),
            )
        return self._verdicts[1]

    def record(self, decision: Decision) -> None:
        self.decisions.append(decision)  # no console: thousands of tunes


@dataclass(frozen=True)
class Outcome:
    deployed: str  # the deployed lever
    candidate: str  # the procedure's choice before the confirmation
    kept_stages: int  # how many stage decisions were keeps
    confirm_lo: float  # the confirmation's interval (NaN when none ran)
    confirm_hi: float
    launches: int = 0  # engine launches of the whole tune's measured cells
    solo_launches: int = 0  # and of its anchors and replicates (one cell each)


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
) -> Outcome:
    """One whole tune through experiments.tune's procedure, confirm and deployment."""
    t = SimulatedTune(cfg, model, "sim", Console(quiet=True), noise=noise, effects=effects, rng=rng,
                      repeats=repeats, gate=gate, anchor_runs=anchor_runs)  # fmt: skip
    final = procedure(t)
    confirmation = confirm(t, final)
    deployed, _ = deployment(t, final, confirmation)
    kept = sum(d.decision == KEEP for d in t.decisions)
    lo = confirmation.ci_lo if confirmation is not None else math.nan
    hi = confirmation.ci_hi if confirmation is not None else math.nan
    return Outcome(deployed.lever, final.lever, kept, lo, hi, t.launches, t.solo_launches)


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
    cfg, model, noise, effects, repeats, seed, gate, anchor_runs = task
    return simulate_once(cfg, model, noise, effects, repeats, np.random.default_rng(seed), gate, anchor_runs)


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
) -> list[Outcome]:
    """`draws` whole tunes under `noise` with the true `effects`, at n repeats per stage, each from its
    own child of `seed`."""
    cfg = cfg or tune_config(gate=gate is not None)
    model = ModelSpec(name="sim", path="sim", quantized_variant="sim-nvfp4" if w4a4 else None)
    tasks = [(cfg, model, noise, dict(effects), n, s, gate, anchor_runs) for s in children(seed, draws)]
    return pool_map(_simulate_task, tasks, workers)


def row_name(noise: ProcedureNoise, n: int, w4a4: bool, gate: GateModel | None, anchor_runs: int = 2) -> str:
    return f"{noise.name} | w4a4 {w4a4} | n {n} | gate {gate.name if gate else 'off'} | anchors {anchor_runs}"


@dataclass(frozen=True)
class LaunchCosts:
    """GPU-hours of one measured launch (van's cells of one repeat on both corpora) and of one launch
    of a single cell (an anchor), as `grid plan` prices them (grid/cost.py) for `overrides`."""

    measured_h: float
    solo_h: float
    overrides: tuple[str, ...]

    def tune_hours(self, o: Outcome) -> float:
        return o.launches * self.measured_h + o.solo_launches * self.solo_h


# SmolLM2 (model tiny) on one H200 as gpu_validate loads it, at the H200 tune's measured van rate
# and warm engine start (docs/benchmarks/2026-12-01-h200-tune.md: 10,165 tok/s, ~65 s).
H200_PLAN = ("experiment=gpu_validate", "grid.models=[tiny]", "grid.levers=[van]", "grid.anchor.enabled=true",
             "+plan.rates.tiny=10165", "plan.engine_start_s=65", "cluster=device_h200")  # fmt: skip


def launch_costs(overrides: Sequence[str] = H200_PLAN) -> LaunchCosts:
    from grid.hours import gpu_hours_at

    cells_h, anchors_h = gpu_hours_at(list(overrides), 1)
    return LaunchCosts(cells_h, anchors_h / 2, tuple(overrides))


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
    power_draws = power_draws or draws

    def run(scenario: str, gain: float, count: int) -> list[Outcome]:
        return outcomes(noise, _effects(gain) if gain else {}, n, count, row_seed(seed, name, scenario),
                        w4a4, cfg, gate, workers, anchor_runs)  # fmt: skip

    null = run("null", 0.0, draws)
    gain10, gain20 = run("+10%", 0.10, power_draws), run("+20%", 0.20, power_draws)
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
        float(np.mean([o.launches + o.solo_launches for o in gain20])),
        float(np.mean([costs.tune_hours(o) for o in gain20])) if costs else math.nan,
        power_draws,
        anchor_runs,
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
        "| chosen before confirmation | deploys a drafting lever at +10% | at +20% "
        "| confirmation interval covers 1.10 | meets |",
        "|---|---|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.noise} | {r.gate} | {'yes' if r.w4a4 else 'no'} | {r.n} | {r.anchor_runs}"
            f" | {r.launches:.0f} | {r.gpu_hours:.1f} | {r.false_deploy:.1%} | {r.false_candidate:.1%}"
            f" | {r.power_10:.1%} | {r.power_20:.1%} | {r.coverage:.1%} | {'yes' if r.meets else 'no'} |"
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


def table_rows(repeats: int) -> list[RowSpec]:
    """The rows `make power` prints, the gate on as the tune runs it: the default noise and the H200's
    launches at `repeats` per stage and the anchor's default 2 runs, and the H200 at the budgets that
    issue 37 asks for (+20 %, then +10 %, deployed >= 80 %): more repeats and 9 anchor runs."""
    return [
        RowSpec(NOISES[0], repeats, gate=GATE_ON),
        RowSpec(H200_LAUNCHES, repeats, gate=GATE_ON),
        RowSpec(H200_LAUNCHES, 15, gate=GATE_ON, anchor_runs=9),
        RowSpec(H200_LAUNCHES, 45, gate=GATE_ON, anchor_runs=9),
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
    return lines


def header(repeats: int, draws: int, power_draws: int, seed: int) -> str:
    """The table's first line, which the README quotes (a test holds the two equal)."""
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
        f" repeat's cells (both corpora), {costs.solo_h:.4f} per anchor or replicate launch"
    )
    print()
    print("\n".join(target_lines(rows)))
    print()
    print(stage_table(OFFSET, (3, 5, 8, 12), args.stage_draws, seed=args.seed, workers=args.workers))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

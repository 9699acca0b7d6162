"""Simulated sessions: a tune's measurements drawn from a noise model instead of engines and a store.

SimulatedSessions.stage draws one session's runs and anchor runs as a grid run would measure them;
evidence gives back what a store would (medians per lever and K with their per-repeat values, each
session's anchor drift, the gate's verdicts). experiments/procedure_power.py's SimulatedTune runs the
whole tune through it; analysis/sequential_power.py one comparison in sequential looks.

Noise model (lognormal, per run = per engine launch), per session (one tune stage):

    ln tok/s = ln(mu * (1 + effect(lever))) + O + D * t + L + e
    O ~ N(0, session^2)   one offset shared by every run of the session (between-session term)
    D ~ N(0, drift^2)     the session's drift from its start anchor (t = 0) to its end anchor (t = 1)
    L ~ N(0, launch^2)    one per engine launch (a lever named in lever_launch: its own sigma):
                          a lever at one K in one repeat is a launch
                          (grid.repeat_order=interleaved: launch = repeat), which serves every
                          corpus of that repeat, so its corpora share L; a lever in
                          corpus_launch_levers has a launch per corpus instead (the drafting
                          levers under grid.engine_reuse=auto), each with its own L; each anchor
                          run is a launch of its own. 0 in the rows that model every run as
                          independent.
    e ~ N(0, van^2)       van and the anchor runs; N(0, lever^2) for every other lever: the run
                          to run term (with launch > 0: the block term inside one launch)
    runs in the grid's interleaved order: repeat r, then the levers (reversed on odd r), then corpora;
    run j of N measured runs at t = (j + 1) / (N + 1); the anchor's `anchor_runs` runs (grid.anchor.runs:
    start, mid1.., end) at t = i / (anchor_runs - 1), so with 3 or more the band is their trend
    (analysis.drift), with 2 their difference

The equivalence gate: off where `gate` is None; with a GateModel every session draws a verdict per
measured lever, K and corpus (experiments/procedure_power.py's module doc).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.drift import DRIFT_COLUMNS, session_drift, split_anchors, trend
from analysis.equivalence import FAIL, PASS
from analysis.equivalence_power import H200_INDEPENDENT, Floor, draw_counts, judged
from analysis.medians import MEDIAN_COLUMNS, lever_medians
from vocab.schema import EquivalenceConfig, ModelSpec

BASE_TOK_PER_S = 1000.0
SEED = 26
VERDICT_COLUMNS = ["session_id", "model", "lever", "k", "corpus", "verdict", "reason", "judged_at",
                   "floor_cell_key", "cell_key", "changes_outputs", "n_prompts", "discordant_against_lever",
                   "discordant_for_lever", "noise_floor_exact_match_rate"]  # fmt: skip


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
    # Levers whose launches move by their own sigma, (lever, sigma) pairs; every other lever's launch,
    # van's and the anchor's, by `launch`. Measured launch terms differ by lever (a drafting lever's
    # host work moves with the launch), so one sigma for all either flatters or punishes the others.
    lever_launch: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if self.lever_launch and self.launch <= 0:
            raise ValueError(f"{self.name}: lever_launch needs launch > 0 (a model with launches)")

    def launch_of(self, lever: str) -> float:
        """The sigma of one launch of `lever` (van's and the anchor's: `launch`)."""
        for name, sigma in self.lever_launch:  # a pair or two: no dict per draw in the simulation's loop
            if name == lever:
                return sigma
        return self.launch

    @property
    def max_launch(self) -> float:
        """The largest launch sigma of any lever: what a one-sigma sizing (size.sd_launch) is given."""
        return max([self.launch, *(sigma for _, sigma in self.lever_launch)])


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


DEFAULT_GATE = EquivalenceConfig()


@dataclass(frozen=True)
class GateModel:
    """How the equivalence gate judges a lossless lever on one corpus in one session.

    With a `floor`: the session's prompt counts drawn from that floor (analysis.equivalence_power.
    draw_counts: van's replicate disagreeing with van as the floor says, the lever `excess` worse where
    `excess` names it, else identical), at the corpus's measured prompt count (`prompts`), judged by
    the gate's own judge_paired with `cfg` (None: EquivalenceConfig()), the counts stored beside the
    verdict as analysis/verdicts.py stores them (the tune's pooled gate reads them); without: pass
    with probability `pass_rate`, else fail, no counts.
    """

    name: str
    floor: Floor | None = None
    prompts: tuple[tuple[str, int], ...] = ()
    pass_rate: float = 1.0
    cfg: EquivalenceConfig | None = None
    excess: tuple[tuple[str, float], ...] = ()  # lever -> how much more it changes than the replicate

    @property
    def gate_cfg(self) -> EquivalenceConfig:
        """The thresholds the gate judges with (`cfg`, else the default)."""
        return self.cfg or DEFAULT_GATE

    def verdict(self, rng: np.random.Generator, corpus: str) -> str:
        return str(self.judge(rng, corpus)["verdict"])

    def judge(self, rng: np.random.Generator, corpus: str, lever: str = "") -> dict[str, object]:
        """One session's verdict on `lever` on `corpus`, with its paired counts (NaN without a floor)."""
        if self.floor is None:
            verdict = PASS if rng.random() < self.pass_rate else FAIL
            return {"verdict": verdict, "n_prompts": math.nan, "discordant_against_lever": math.nan,
                    "discordant_for_lever": math.nan, "noise_floor_exact_match_rate": math.nan}  # fmt: skip
        n = dict(self.prompts)[corpus]
        cfg = self.gate_cfg
        lever_only, floor_only, both, _ = (
            int(c) for c in draw_counts(rng, dict(self.excess).get(lever, 0.0), n, 1, self.floor)[0]
        )
        return {
            "verdict": judged((n, lever_only, floor_only, both), cfg, _cfg_key(cfg)),
            "n_prompts": n,
            "discordant_against_lever": lever_only,
            "discordant_for_lever": floor_only,
            "noise_floor_exact_match_rate": (n - floor_only - both) / n,
        }


# astuple of each gate config met, by identity (a config is not hashable; astuple deep-copies it).
_CFG_KEYS: dict[int, tuple[EquivalenceConfig, tuple[object, ...]]] = {}


def _cfg_key(cfg: EquivalenceConfig) -> tuple[object, ...]:
    held = _CFG_KEYS.get(id(cfg))
    if held is None or held[0] is not cfg:
        held = _CFG_KEYS[id(cfg)] = (cfg, astuple(cfg))
    return held[1]


# The gate as the tune runs it on the H200 (gpu_short: 160 measured prompts of code_complete, 78 of
# chat_bench), its floor the independent one: the replicate changes each output on its own, the
# harder case for an identical lever (h200_measured's fragile prompts pass every time).
GATE_ON = GateModel(
    "on (h200_independent floor)", H200_INDEPENDENT, (("code_complete", 160), ("chat_bench", 78))
)


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


@dataclass(frozen=True)
class SessionCorpora:
    """What a simulated session reads of a tune's config (experiments.tune.TuneConfig has both)."""

    corpora: Sequence[str]
    confirm_repeats: int | None = None


@dataclass
class SimulatedSessions:
    """Sessions drawn from the noise model (module doc); `cfg` gives the corpora (SessionCorpora, or a
    tune's TuneConfig), `keys` collects every drawn cell's key."""

    cfg: Any
    model: ModelSpec
    tune_id: str
    keys: set[str] = field(default_factory=set)
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
    # Levers whose every corpus gets an engine launch of its own in a repeat (grid.engine_reuse=auto, the
    # default, gives one to each lever that drafts from the engine's history: grid/config/expand.py
    # fresh_per_corpus): each such cell draws its own launch term and counts a launch of one corpus.
    # () models one launch per lever and repeat serving every corpus (grid.engine_reuse=per_spec).
    corpus_launch_levers: tuple[str, ...] = ()
    launches: int = 0  # engine launches of measured cells serving every corpus of their repeat
    corpus_launches: int = 0  # engine launches of one corpus's measured cell (corpus_launch_levers)
    solo_launches: int = 0  # launches of one cell: the anchors, and van's replicates with the gate on
    verdict_rows: list[dict] = field(default_factory=list)
    _cells: dict[str, tuple[str, str, int, str, int, float]] = field(default_factory=dict)
    _cache: tuple | None = None
    _verdicts: tuple[int, pd.DataFrame] | None = None

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
                # One launch per (lever, K, repeat) serves every corpus of the repeat, or, for a lever in
                # corpus_launch_levers, one per corpus (drawn below).
                per_corpus = lever in self.corpus_launch_levers
                launch = self.rng.normal(0.0, self.noise.launch_of(lever)) if self.noise.launch > 0 else 0.0
                for c, corpus in enumerate(corpora):
                    if per_corpus and c > 0 and self.noise.launch > 0:
                        launch = self.rng.normal(0.0, self.noise.launch_of(lever))
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
        corpus_specs = sum(lever in self.corpus_launch_levers for lever, _ in specs)
        self.launches += repeats * (len(specs) - corpus_specs)
        self.corpus_launches += repeats * corpus_specs * len(corpora)
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
                    found = self.gate.judge(self.rng, corpus, lever)
                    # The cell the gate judges: repeat 0's, whose prompts van's replicate ran.
                    self.verdict_rows.append(
                        {"session_id": session, "model": self.model.name, "lever": lever, "k": k,
                         "corpus": corpus, "reason": "simulated", "judged_at": f"{self.sessions_run:04d}",
                         "floor_cell_key": "simulated", "cell_key": f"{session}/{lever}/{k}/{corpus}/0",
                         "changes_outputs": False, **found}
                    )  # fmt: skip
        self.keys |= keys
        return keys

    def cells(self, keys: set[str] | None = None) -> None:
        """Drawn cells record no engine configuration: nothing else differs, no dynamic K to check."""
        return None

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

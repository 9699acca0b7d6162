"""How many launches (and blocks per launch) a tune needs, from the noise it measures. Pure but for
`noise_for`, which reads a store, and `tune_costs`, which prices the stages' grids as `grid plan` does.

A stage keeps a lever when the launch-paired 90 % interval of lever / van clears the band
(analysis.decision, judged by launch wherever launches hold several repeats: analysis.medians). With
L launches per side of b blocks each, van and the lever on launches of their own,

    se       = sqrt(2 (sd_launch^2 + sd_block^2 / b) / L)          (ln units)
    power(g) = P(T'_{L-1, nc} > t_{0.95, L-1}),  nc = (ln(1 + g) - band) / se

(T' noncentral t: the interval's lower end clears the band). A real gain is deployed only when every
test on its path keeps it (the stage that proposes it and the confirmation: `tests_on_path`, 2), so
each test is sized to power^(1 / tests_on_path) and the path's power is the product. This treats the
tests as independent, which they are: each stage and the confirmation draw their own prompts and
launches. Levers that share a launch with their incumbent (grid.engine_reuse=shared) see part of the
launch term cancel; the formula ignores that, so it reads conservative for them.

The noise: the store's variance components for this model (analysis/variance.py via
grid.plan.groups.lever_sds_from_store: the formula takes the root mean square over the levers, the
simulated check each lever's own launch term) where it can estimate both terms, else the prior
`size.sd_launch`, `size.sd_block` (the H200 record's host-bound SmolLM2 spread by default), said so.
The cost: each stage's grid priced by `grid plan`'s model (grid/plan/hours.py) at three designs; a
stage's GPU-hours are linear in launches and in blocks, plus what it launches once whatever the design
(the gate's van replicates), so three prices give its per-launch, per-block and once terms exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scipy.stats import nct

from analysis.decision import CONFIDENCE, t_quantile

# The H200's host-bound SmolLM2 spread (issue 44): 11.8 % between launches, 10 % block to block.
PRIOR_SD_LAUNCH = 0.118
PRIOR_SD_BLOCK = 0.10
MAX_LAUNCHES = 200
# The stages the fit may leave out, first to last: dynamic K, then the K sweep. Each refines the drafting
# lever the tune already has (its K, or a K that moves) at the price of launches every repeat: the K
# sweep 6 of the whole tune's 16 a repeat, dynk 3. van, suffix and kpad are the path a drafting gain is
# found on and the confirmation is what a deploy rests on: never left out. w4a4 is not either: it runs
# only with a quantised variant, where it is the one stage that tries another checkpoint (a lever of its
# own, not a refinement of the drafting one), and it costs nothing where there is none.
FIT_DROP_ORDER = ("dynk", "best_k")
# Gains seen within a budget closer than this are a tie (detectable_gain's resolution): the longer list.
FIT_TIE = 0.005


@dataclass
class SizeSpec:
    """conf/tune/tune.yaml `size`: how the tune sizes its stages (this module's doc)."""

    # Size the stages from the measured noise. A grid.repeats given in grid_overrides wins (the tune
    # then says what power it has); false: the experiment's own grid.repeats, as before.
    auto: bool = True
    # The smallest real gain the tune must see: each comparison sized to 80 % power at +10 %.
    min_gain: float = 0.10
    power: float = 0.80
    # The tests a real gain must pass to be deployed (the stage that keeps it, the confirmation).
    tests_on_path: int = 2
    # GPU-hours the whole tune may take. null: budget_gpu_h_per_gpu x the GPUs one engine of the model
    # spans (its tp), where the engines get GPUs (no cap on CPU engines); a number: that cap; inf: no
    # cap. Within a cap the tune says which gain it can see, fits its stage list (fit_stages), and
    # stops before launch when the gain is above useful_gain.
    budget_gpu_h: float | None = None
    budget_gpu_h_per_gpu: float = 2.0
    useful_gain: float = 0.50
    # Where the stages cannot see a real min_gain lever within the budget, leave out the search stages
    # (FIT_DROP_ORDER: dynk, then best_k) while that lets the tune see a smaller gain within it. Only the
    # default stage list is fitted: a stages= of the user's own is run as given. false: as configured.
    fit_stages: bool = True
    # The prior noise (ln tok/s) where the store holds no variance components for the model.
    sd_launch: float = PRIOR_SD_LAUNCH
    sd_block: float = PRIOR_SD_BLOCK
    # Blocks per launch tried (1 unless the stages run grid.engine_reuse=shared, where one launch
    # holds several repeats and is judged by launch).
    max_blocks: int = 8
    # Tunes simulated through the tune's own code (experiments.procedure_power) to check the design:
    # the formula leaves out the drift band and the equivalence gate, which cost power. Launches are
    # added until the simulated deploy rate reaches `power`. 0: the formula alone.
    verify_draws: int = 300
    # Where the experiment's anchor runs cap the power (2 runs: the band is two launches' difference,
    # which more launches do not shrink), the tune tries this many (the band becomes the anchors'
    # trend, scaled by the comparison's lag: analysis.drift).
    anchor_runs_if_capped: int = 9


@dataclass(frozen=True)
class Noise:
    sd_launch: float
    sd_block: float
    source: str  # where the figures come from, in words
    # Each lever's own launch sd where the store measured it, (lever, sd) pairs: the formula takes
    # sd_launch (their root mean square), the simulated tune (verify_draws) each lever's own.
    lever_launch: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Costs:
    """The whole tune's GPU-hours at L launches of b blocks: L (per_launch_h + b per_block_h) + fixed_h."""

    per_launch_h: float
    per_block_h: float
    fixed_h: float  # the drift anchors' launches, whatever the design
    # Launches each stage makes once whatever the design: van's replicates of repeat 0, a launch per
    # corpus, that the equivalence gate judges the drafting levers against.
    once_h: float = 0.0

    def gpu_h(self, launches: int, blocks: int) -> float:
        return launches * (self.per_launch_h + blocks * self.per_block_h) + self.fixed_h + self.once_h

    def with_anchor_runs(self, runs: int, priced_runs: int) -> Costs:
        """The same tune with `runs` anchor runs a session where these costs priced `priced_runs`."""
        return Costs(self.per_launch_h, self.per_block_h, self.fixed_h * runs / priced_runs, self.once_h)


@dataclass(frozen=True)
class Design:
    launches: int
    blocks: int
    power_each: float  # one comparison's power at the gain sized for
    power_path: float  # power_each ** tests_on_path
    gpu_h: float

    @property
    def repeats(self) -> int:
        return self.launches * self.blocks

    def words(self) -> str:
        """'46 launches x 1 block'."""
        return f"{self.launches} launches x {self.blocks} block{'s' if self.blocks > 1 else ''}"


def power_by_launch(
    gain: float,
    noise: Noise,
    launches: int,
    blocks: int = 1,
    band: float = 0.0,
    confidence: float = CONFIDENCE,
) -> float:
    """The probability that a launch-paired comparison at L launches x b blocks keeps a real `gain`."""
    if launches < 2:
        return 0.0
    var = 2.0 * (noise.sd_launch**2 + noise.sd_block**2 / blocks) / launches
    se = math.sqrt(var)
    effect = math.log1p(gain) - math.log1p(band)
    q = 1.0 - (1.0 - confidence) / 2.0
    if se == 0.0:
        return 1.0 if effect > 0 else 0.0
    return float(nct.sf(t_quantile(q, launches - 1), launches - 1, effect / se))


def cheapest_design(
    gain: float, noise: Noise, costs: Costs, spec: SizeSpec, blocks_allowed: bool, band: float = 0.0
) -> Design | None:
    """The cheapest (launches, blocks) whose path power at `gain` reaches spec.power; None within the caps."""
    each = spec.power ** (1.0 / max(1, spec.tests_on_path))
    best: Design | None = None
    for blocks in range(1, (spec.max_blocks if blocks_allowed else 1) + 1):
        launches = _fewest_launches(lambda n, b=blocks: power_by_launch(gain, noise, n, b, band) >= each)
        if launches is None:
            continue
        p = power_by_launch(gain, noise, launches, blocks, band)
        design = Design(launches, blocks, p, p**spec.tests_on_path, costs.gpu_h(launches, blocks))
        if best is None or design.gpu_h < best.gpu_h - 1e-12:
            best = design
    return best


def _fewest_launches(enough: Callable[[int], bool]) -> int | None:
    """The smallest n in 2..MAX_LAUNCHES with enough(n) (monotone in n), by bisection."""
    if not enough(MAX_LAUNCHES):
        return None
    lo, hi = 2, MAX_LAUNCHES
    while lo < hi:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def detectable_gain(
    noise: Noise, costs: Costs, spec: SizeSpec, budget_gpu_h: float, blocks_allowed: bool
) -> tuple[float, Design] | None:
    """The smallest gain (to 0.5 point) the tune sees at spec.power within `budget_gpu_h`, and its design;
    None when even a +1000 % gain does not fit (the anchors alone may exceed the budget)."""

    def fits(gain: float) -> Design | None:
        design = cheapest_design(gain, noise, costs, spec, blocks_allowed)
        return design if design is not None and design.gpu_h <= budget_gpu_h else None

    lo, hi = 0.0, 10.0
    if fits(hi) is None:
        return None
    while hi - lo > 0.005:
        mid = (lo + hi) / 2
        if fits(mid) is None:
            lo = mid
        else:
            hi = mid
    design = fits(hi)
    assert design is not None
    return hi, design


def tune_budget(spec: SizeSpec, gpus: int) -> tuple[float, str]:
    """The GPU-hours the whole tune may take (math.inf: no cap) and where the figure comes from, in words:
    size.budget_gpu_h when given, else size.budget_gpu_h_per_gpu x `gpus` (the GPUs one engine of the
    model spans); no cap where the engines get none (CPU engines: an engine-hour there is not a GPU's)."""
    if spec.budget_gpu_h is not None:
        return spec.budget_gpu_h, f"size.budget_gpu_h={spec.budget_gpu_h:g}"
    if gpus < 1 or math.isinf(spec.budget_gpu_h_per_gpu):
        return math.inf, "no cap"
    plural = "s" if gpus > 1 else ""
    return spec.budget_gpu_h_per_gpu * gpus, (
        f"{spec.budget_gpu_h_per_gpu:g} per GPU x {gpus} GPU{plural} of the model's engine: "
        "size.budget_gpu_h_per_gpu"
    )


def stage_lists(stages: Sequence[str]) -> list[tuple[str, ...]]:
    """`stages`, then it without each of FIT_DROP_ORDER's stages it holds in turn, each list the last
    one less a stage: the lists the fit weighs, longest first."""
    out = [tuple(stages)]
    for stage in FIT_DROP_ORDER:
        if stage in out[-1]:
            out.append(tuple(s for s in out[-1] if s != stage))
    return out


def gain_within(
    noise: Noise, costs: Costs, spec: SizeSpec, budget_gpu_h: float, blocks_allowed: bool
) -> float:
    """The smallest gain the tune sees at spec.power within the budget by the formula: spec.min_gain
    where that one's cheapest design fits, else detectable_gain's (math.inf: none at all)."""
    design = cheapest_design(spec.min_gain, noise, costs, spec, blocks_allowed)
    if design is not None and design.gpu_h <= budget_gpu_h:
        return spec.min_gain
    within = detectable_gain(noise, costs, spec, budget_gpu_h, blocks_allowed)
    return math.inf if within is None else within[0]


def fitted(gains: Sequence[float]) -> int:
    """The place of the list that sees the smallest gain among `gains` (the lists longest first); a tie
    (FIT_TIE) keeps the longer list."""
    best = 0
    for at, gain in enumerate(gains):
        if gain < gains[best] - FIT_TIE:
            best = at
    return best


def verified_design(
    design: Design,
    gain: float,
    noise: Noise,
    costs: Costs,
    spec: SizeSpec,
    anchor_runs: int,
    gate: bool,
    rate: Callable[[float, Noise, int, int, bool, int], float],
    max_gpu_h: float = math.inf,
) -> tuple[Design, float]:
    """`design` with launches added (a quarter more each step) until the simulated tune (`rate`:
    experiments.procedure_power.simulated_deploy_rate, the tune's own code) deploys a real
    `gain` at spec.power; (the design, its simulated rate). It stops short where one step more would
    cost above `max_gpu_h`, past 4 x the formula's launches, or where the rate stops rising (two steps
    under 2 points: the drift band, not the launches, caps it, and more anchor runs are the cure).
    Where the formula's design already reaches spec.power, launches are taken away one at a time
    while the simulated tune still reaches it: the formula multiplies two tests' powers, but a real
    gain the first stage misses has later stages to be kept in (kpad, best K, dynk), and the pooled
    gate no longer caps it, so the formula overshoots (issue 44: 8 launches where 7 reach 80 %).
    Blocks stay as they are: the simulation runs a launch per repeat, so only one-block designs are
    checked (others come back unchanged, with NaN)."""
    if spec.verify_draws < 1 or design.blocks != 1:
        return design, math.nan

    def checked(launches: int, found: float) -> tuple[Design, float]:
        p = power_by_launch(gain, noise, launches)
        return Design(launches, 1, p, p**spec.tests_on_path, costs.gpu_h(launches, 1)), found

    launches, cap = design.launches, min(MAX_LAUNCHES, 4 * design.launches)
    found = rate(gain, noise, launches, anchor_runs, gate, spec.verify_draws)
    if found >= spec.power:
        while launches > 2:
            fewer = rate(gain, noise, launches - 1, anchor_runs, gate, spec.verify_draws)
            if fewer < spec.power:
                break
            launches, found = launches - 1, fewer
        return checked(launches, found)
    flat, last = 0, -1.0
    while True:
        flat = flat + 1 if found - last < 0.02 else 0
        last = found
        more = min(cap, launches + max(1, launches // 4))
        if found >= spec.power or more == launches or flat >= 2 or costs.gpu_h(more, 1) > max_gpu_h:
            return checked(launches, found)
        launches = more
        found = rate(gain, noise, launches, anchor_runs, gate, spec.verify_draws)


def noise_for(store: str, model: str, levers: Sequence[str], spec: SizeSpec) -> Noise:
    """The store's variance components of `model` (the root mean square over `levers`, and each lever's
    own launch term) where it can estimate both terms, else the prior (spec.sd_launch, spec.sd_block),
    and where each came from."""
    from grid.plan.groups import lever_sds_from_store
    from store.fs import StoreError as FsStoreError
    from vocab.errors import GridError

    prior = f"prior size.sd_launch={spec.sd_launch:g}, size.sd_block={spec.sd_block:g}"
    try:
        launch, block, words, by_lever = lever_sds_from_store(store, model, list(levers))
    except (GridError, FsStoreError, OSError, ValueError) as exc:
        return Noise(spec.sd_launch, spec.sd_block, f"{prior}: no store read ({type(exc).__name__})")
    if math.isnan(launch) or math.isnan(block):
        return Noise(spec.sd_launch, spec.sd_block, f"{prior} (the store cannot estimate both: {words})")
    return Noise(launch, block, f"measured: {words}", tuple(sorted(by_lever.items())))


def tune_costs(stage_overrides: Sequence[Sequence[str]], blocks_allowed: bool) -> Costs:
    """Costs of the tune whose stages run the grids `stage_overrides` (each a full override list), priced
    by grid.plan.hours at three designs per stage (linear in launches and blocks, plus its once term)."""
    from grid.plan.hours import gpu_hours_at

    per_launch = per_block = fixed = once = 0.0
    for overrides in stage_overrides:
        # L launches of b blocks: L (A + b B) + F, F what the stage launches once (the gate's van
        # replicates); three launches less two give A + B, two less twice that F.
        two_launches_h, anchors_h = gpu_hours_at(list(overrides), 2)
        three_launches_h, _ = gpu_hours_at(list(overrides), 3)
        launch_and_block = three_launches_h - two_launches_h
        once += two_launches_h - 2.0 * launch_and_block
        if blocks_allowed:  # L = 2 at b = 2: 2 (A + 2 B) + F
            two_blocks_h, _ = gpu_hours_at([*overrides, "grid.launches_per_argv=2"], 4)
            block = (two_blocks_h - two_launches_h) / 2.0
            launch = launch_and_block - block
        else:  # a launch per repeat: L (A + B), one term
            block, launch = 0.0, launch_and_block
        per_launch += launch
        per_block += block
        fixed += anchors_h
    return Costs(per_launch, per_block, fixed, once)


def _design_overrides(launches: int, blocks: int, shared: bool) -> list[str]:
    """The grid overrides that run `launches` launches per argv of `blocks` repeats each."""
    out = [f"grid.repeats={launches * blocks}"]
    if shared and blocks > 1:
        out.append(f"grid.launches_per_argv={launches}")
    return out


def design_overrides(design: Design, shared: bool) -> list[str]:
    """The grid overrides a stage adds to run `design`."""
    return _design_overrides(design.launches, design.blocks, shared)

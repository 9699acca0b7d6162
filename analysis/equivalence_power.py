"""Pass and catch rates of the paired equivalence gate, by simulation: `python -m analysis.equivalence_power`.

The gate (analysis/equivalence.py: judge_paired) is run on simulated prompt
outcomes. Per prompt, each run either reproduces van's greedy output or
changes it. The model:

  a share `fragile_share` of prompts is fragile (bf16 reduction order can flip a
  token somewhere in the output), the rest stable;
  on a fragile prompt, van's replicate changes the output with probability
  `fragile_change`, and so does the lever's own noise, independently;
  the lever also changes each prompt's output with probability `extra_change`
  (a bug in a lossless lever), independently of the noise.

A floor is given by what one can measure: the share of prompts the replicate
changes (differ_share = fragile_share x fragile_change) and the share on which
a lever identical to van is discordant with the replicate (discordant_share =
2 fragile_share fragile_change (1 - fragile_change)); a lever `excess` points
worse has extra_change = excess / (1 - differ_share), so that d (the share it
changes minus the share the replicate changes) is exactly `excess`.

Floors:
  h200_independent  the replicate changes 48% of outputs (bf16, 1,024 tokens,
                    HumanEval on an H200: 86 of 164 matched), every prompt equally
                    fragile: runs independent, ~50% discordant, the noisiest case
  h200_measured     the H200 tune of 2026-12-01: the replicate changed 104 of 160,
                    a lever identical in effect (suffix) was discordant with it on
                    33 of 160 (21%): fragile prompts are fragile in every run
  quiet_independent the replicate changes 10% of outputs, independently: a quieter
                    engine, where the gate's margin (applied_margin) is narrower
  deterministic     float32 on the CPU: the replicate changes nothing

The margin is the gate's own (analysis/equivalence.py: applied_margin): the
configured 10 points, widened from the replicate's changed share where the
prompts are too few for a lever identical to van to pass cfg.identical_pass_rate
of the time; widest_margin(n) is the widest it applies, at a floor changing half
of outputs. "At the margin" below is a lever that much worse than van's rerun.

Targets (tests/unit/analysis/test_equivalence_power.py), at every prompt count a
corpus ships (NS: cpu_small 25, smoke's chat_bench 40, the study's chat_bench 46,
gpu_validate's 78, gpu_short 160, summarize 281, study 512): a lever identical
to van passes >= 95% on every floor, a lever at the margin is caught (failed or
no_reference, never a pass) >= 95% on every floor; below min_prompts nothing
passes.

For simulations of the whole procedure (experiments/procedure_power.py), which
run with the gate on as the tune does, draw_passes(rng, excess, n_prompts,
draws, floor, cfg) draws the gate's verdict for a lever whose true excess
changed share over van's rerun is `excess` (0: lossless).
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Sequence
from dataclasses import astuple, dataclass

import numpy as np

from analysis.equivalence import (
    DETECT_EXCESS,
    DETECT_POWER,
    KEEP_SHARE,
    NO_REFERENCE,
    PASS,
    PATH_PASS,
    at_pass_rate,
    catch_rate,
    judge_paired,
    look_pass_rate,
    paired_from_counts,
    prompts_for_power,
    widest_margin,
)
from vocab.schema import EquivalenceConfig

# The prompt counts the shipped corpora and loads judge a lever on (module doc).
NS = (25, 40, 46, 78, 160, 281, 512)
# A lever's true excess: identical to van, at the gate's widest margin, 10 points worse.
IDENTICAL, AT_MARGIN, PLUS_10 = "identical", "at_margin", "plus_10"
LEVERS = (IDENTICAL, AT_MARGIN, PLUS_10)
DRAWS = 20_000
SEED = 26


@dataclass(frozen=True)
class Floor:
    """van's own run-to-run change of greedy outputs (module doc)."""

    name: str
    differ_share: float
    discordant_share: float

    @property
    def fragile_change(self) -> float:
        """P(a run changes a fragile prompt's output), from the measured shares."""
        return 1.0 - self.discordant_share / (2.0 * self.differ_share) if self.differ_share else 0.0

    @property
    def fragile_share(self) -> float:
        return self.differ_share / self.fragile_change if self.fragile_change else 0.0


def independent(name: str, differ_share: float) -> Floor:
    """A floor where every prompt is equally fragile: runs change outputs independently."""
    return Floor(name, differ_share, 2.0 * differ_share * (1.0 - differ_share))


H200_INDEPENDENT = independent("h200_independent", 0.48)
H200_MEASURED = Floor("h200_measured", 104 / 160, 33 / 160)
QUIET_INDEPENDENT = independent("quiet_independent", 0.10)
DETERMINISTIC = Floor("deterministic", 0.0, 0.0)
FLOORS = (H200_INDEPENDENT, H200_MEASURED, QUIET_INDEPENDENT, DETERMINISTIC)


def outcome_probabilities(floor: Floor, excess: float) -> tuple[float, float, float, float]:
    """P(lever only changed), P(replicate only changed), P(both changed), P(neither), per prompt."""
    fragile, change = floor.fragile_share, floor.fragile_change
    extra = excess / (1.0 - floor.differ_share)
    lever_changes_fragile = 1.0 - (1.0 - change) * (1.0 - extra)
    lever_only = (1.0 - fragile) * extra + fragile * (1.0 - change) * lever_changes_fragile
    floor_only = fragile * change * (1.0 - change) * (1.0 - extra)
    both = fragile * change * lever_changes_fragile
    return lever_only, floor_only, both, 1.0 - lever_only - floor_only - both


# judge_paired's verdict per (config, n, lever only, replicate only, both): draws repeat counts often.
_VERDICTS: dict[tuple[object, ...], str] = {}


def judged(counts: tuple[int, int, int, int], cfg: EquivalenceConfig, cfg_key: tuple[object, ...]) -> str:
    """judge_paired's verdict on (n prompts, lever only, replicate only, both), remembered per cfg_key."""
    key = (cfg_key, counts)
    if key not in _VERDICTS:
        _VERDICTS[key] = judge_paired(paired_from_counts(*counts), cfg).verdict
    return _VERDICTS[key]


def draw_counts(
    rng: np.random.Generator, excess: float, n_prompts: int, draws: int = 1, floor: Floor = H200_INDEPENDENT
) -> np.ndarray:
    """`draws` sessions' prompt counts (lever only changed, replicate only changed, both, neither), an
    array of shape (draws, 4): `n_prompts` prompts run by van, van's replicate and a lever `excess`
    worse (draw_verdicts' model; what analysis/verdicts.py stores of a paired judgement)."""
    room = 1.0 - floor.differ_share
    if not 0.0 <= excess <= room + 1e-12:
        raise ValueError(
            f"excess {excess:g}: a lever can change at most 1 - differ_share = {room:.2f} more of van's "
            f"outputs than the replicate on floor {floor.name}; pass an excess in [0, {room:.2f}]"
        )
    return rng.multinomial(n_prompts, outcome_probabilities(floor, min(excess, room)), size=draws)


def draw_verdicts(
    rng: np.random.Generator,
    excess: float,
    n_prompts: int,
    draws: int = 1,
    floor: Floor = H200_INDEPENDENT,
    cfg: EquivalenceConfig | None = None,
) -> np.ndarray:
    """`draws` verdicts ('pass', 'fail', 'no_reference') of the gate on simulated sessions.

    Each draw: `n_prompts` prompts run by van, van's replicate and the lever
    (outcome_probabilities of `floor`); the lever changes a share `excess` more of
    van's outputs than the replicate does (0.0: a lossless lever; excess in
    [0, 1 - floor.differ_share]); judged by analysis.equivalence.judge_paired
    with `cfg` (default EquivalenceConfig()).
    """
    cfg = cfg or EquivalenceConfig()
    counts = draw_counts(rng, excess, n_prompts, draws, floor)
    # Distinct counts are few next to the draws: judge each once (astuple deep-copies: once per call).
    distinct, inverse = np.unique(counts[:, :3], axis=0, return_inverse=True)
    cfg_key = astuple(cfg)
    verdicts = [judged((n_prompts, a, b, c), cfg, cfg_key) for a, b, c in distinct.tolist()]
    return np.array(verdicts, dtype=object)[inverse.reshape(-1)]


def draw_passes(
    rng: np.random.Generator,
    excess: float,
    n_prompts: int,
    draws: int = 1,
    floor: Floor = H200_INDEPENDENT,
    cfg: EquivalenceConfig | None = None,
) -> np.ndarray:
    """Whether the gate passes the lever, per draw (bool array of `draws`): draw_verdicts == 'pass'.

    The call a simulation of the whole procedure makes to run "with the gate on,
    as the tune does": a lever that is not passed is not used (analysis/gate.py).
    Example: draw_passes(rng, 0.0, 46) -> array([ True]) about 96% of the time.
    """
    return draw_verdicts(rng, excess, n_prompts, draws, floor, cfg) == PASS


@dataclass(frozen=True)
class Rates:
    """Shares of simulated gate verdicts."""

    passed: float
    no_reference: float

    @property
    def caught(self) -> float:
        """Not passed: failed or no_reference (neither lets the lever be used, analysis/gate.py)."""
        return 1.0 - self.passed


def excess_of(lever: str, n_prompts: int, floor: Floor, cfg: EquivalenceConfig) -> float:
    """The true excess of a named lever (LEVERS), capped at what the floor leaves room for."""
    wanted = {IDENTICAL: 0.0, AT_MARGIN: widest_margin(n_prompts, cfg), PLUS_10: 0.10}[lever]
    return min(wanted, 1.0 - floor.differ_share)


def simulate(
    floor: Floor,
    excess: float,
    n_prompts: int,
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
) -> Rates:
    """Run judge_paired on `draws` simulated sessions of `n_prompts` prompts each."""
    cfg = cfg or EquivalenceConfig()
    # Each cell draws its own stream, so a cell's figures do not depend on which others ran.
    rng = np.random.default_rng([seed, n_prompts, round(excess * 1e6), zlib.crc32(floor.name.encode())])
    verdicts = draw_verdicts(rng, excess, n_prompts, draws, floor, cfg)
    return Rates(
        float(np.count_nonzero(verdicts == PASS)) / draws,
        float(np.count_nonzero(verdicts == NO_REFERENCE)) / draws,
    )


def table(
    floors: Sequence[Floor] = FLOORS,
    levers: Sequence[str] = LEVERS,
    ns: Sequence[int] = NS,
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
) -> dict[tuple[str, str, int], Rates]:
    """(floor name, lever, n prompts) -> rates, over the whole grid."""
    cfg = cfg or EquivalenceConfig()
    return {
        (floor.name, lever, n): simulate(floor, excess_of(lever, n, floor, cfg), n, cfg, draws, seed)
        for floor in floors
        for lever in levers
        for n in ns
    }


def markdown(
    rates: dict[tuple[str, str, int], Rates],
    floors: Sequence[Floor] = FLOORS,
    levers: Sequence[str] = LEVERS,
    ns: Sequence[int] = NS,
    cfg: EquivalenceConfig | None = None,
) -> str:
    """One row per floor and lever: an identical lever's pass rate, a worse lever's catch rate (%)."""
    cfg = cfg or EquivalenceConfig()
    lines = [
        "| floor (replicate changes / identical lever discordant) | lever | "
        + " | ".join(f"{n} prompts" for n in ns)
        + " |",
        "|---|---|" + "---|" * len(ns),
        "| (any) | widest margin, points | "
        + " | ".join(f"{100 * widest_margin(n, cfg):.1f}" for n in ns)
        + " |",
    ]
    what = {
        IDENTICAL: "identical: pass",
        AT_MARGIN: "at the widest margin: caught",
        PLUS_10: "+10 points: caught",
    }
    for floor in floors:
        label = f"{floor.name} ({floor.differ_share:.0%} / {floor.discordant_share:.0%})"
        for lever in levers:
            cells = [rates[floor.name, lever, n] for n in ns]
            shares = [c.passed if lever == IDENTICAL else c.caught for c in cells]
            # '*': the floor leaves less room than the margin; the lever changes every output it can.
            marks = ["*" if excess_of(lever, n, floor, cfg) < excess_of(lever, n, DETERMINISTIC, cfg) else ""
                     for n in ns]  # fmt: skip
            figures = " | ".join(f"{100 * c:.1f}{mark}" for c, mark in zip(shares, marks, strict=True))
            lines.append(f"| {label} | {what[lever]} | {figures} |")
    lines.append("")
    lines.append(
        "* the margin is more than the floor leaves (1 - replicate's changed share): "
        "the lever changes every output the replicate kept"
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class StudyCorpus:
    """A study corpus as the gate meets it: prompts the throughput measurement sends, prompts it holds."""

    name: str
    measured: int  # at the study cap: conf/experiment/final.yaml grid.num_prompts, else load=study's 512
    available: int  # distinct prompts at the study cap (`python -m assets experiment=final` outputs)


# .cache/data/study/corpora/<name>.jsonl line counts (the conf/corpus comments give the same).
STUDY_CORPORA = (
    StudyCorpus("chat", 512, 16_636),
    StudyCorpus("chat_bench", 46, 110),
    StudyCorpus("code_complete", 512, 625),
    StudyCorpus("code_edit", 512, 1_026),
    StudyCorpus("summarize", 281, 345),
    StudyCorpus("rag_qa", 512, 1_294),
    StudyCorpus("agentic", 512, 2_913),
    StudyCorpus("mix", 512, 1_610),
)
NOISY_FLOORS = (H200_INDEPENDENT, H200_MEASURED, QUIET_INDEPENDENT)


def worse_discordance(floor: Floor, excess: float = DETECT_EXCESS) -> float:
    """The share of prompts a lever `excess` worse disagrees with the replicate on, on `floor`."""
    lever_only, floor_only, _, _ = outcome_probabilities(floor, excess)
    return lever_only + floor_only


def gate_prompts(corpus: StudyCorpus, cfg: EquivalenceConfig | None = None) -> int:
    """The prompts the gate decides on: the measured ones, or, where they are too few to catch a lever
    DETECT_EXCESS worse DETECT_POWER of the time on the noisiest floor (prompts_for_power), that many,
    drawn apart from the throughput measurement (the warm-up's prompts first, then unmeasured
    ones), capped at what the corpus holds; below that the verdict says which power it has."""
    # Two points above the target: catch_rate is an approximation (within ~2 points at these counts).
    needed = prompts_for_power(
        worse_discordance(H200_INDEPENDENT), cfg or EquivalenceConfig(), power=DETECT_POWER + 0.02
    )
    return min(corpus.available, max(corpus.measured, needed))


def study_markdown(
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
    floors: Sequence[Floor] = NOISY_FLOORS,
) -> str:
    """Per study corpus: the gate's prompts, an identical lever's pass and a +10-point lever's catch (%)."""
    cfg = cfg or EquivalenceConfig()
    head = " | ".join(f"{f.name}: identical pass / +10 caught (stated)" for f in floors)
    lines = [
        f"| corpus | measured | holds | prompts | {head} |",
        "|---|---|---|---|" + "---|" * len(floors),
    ]
    for corpus in STUDY_CORPORA:
        counts = {corpus.measured: "measured", gate_prompts(corpus, cfg): "gate decides on"}
        for n, label in sorted(counts.items()):
            cells = []
            for floor in floors:
                identical = simulate(floor, 0.0, n, cfg, draws, seed).passed
                caught = simulate(
                    floor, min(DETECT_EXCESS, 1 - floor.differ_share), n, cfg, draws, seed
                ).caught
                stated = catch_rate(n, worse_discordance(floor), cfg)
                mark = "" if caught >= DETECT_POWER else " (short)"
                cells.append(f"{100 * identical:.1f} / {100 * caught:.1f}{mark} ({100 * stated:.0f})")
            row = f"| {corpus.name} | {corpus.measured} | {corpus.available} | {n} ({label})"
            lines.append(f"{row} | {' | '.join(cells)} |")
    return "\n".join(lines)


# Sessions a deployed lever's gate pools on the tune's path: the fewest (kept at the last stage before
# the confirmation: that stage and the confirmation) and a lever kept at the first stage (suffix:
# measured again as the incumbent of kpad, best K and dynk, then confirmed).
PATH_SESSIONS = (2, 5)
# Draws per cell of the path table: each draw judges up to 5 sessions' pooled counts (sd ~0.6 point at 80 %).
PATH_DRAWS = 4_000
# The tune's corpora as the simulated tune measures them (gpu_short: analysis/simulated_sessions.GATE_ON).
TUNE_CORPORA = (StudyCorpus("code_complete (tune, gpu_short)", 160, 625),
                StudyCorpus("chat_bench (tune, gpu_short)", 78, 110))  # fmt: skip


def path_pass_rate(
    floor: Floor,
    excess: float,
    n_prompts: int,
    sessions: int,
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
    path_pass: float = PATH_PASS,
    keep_share: float = KEEP_SHARE,
    corpora: int = 2,
) -> float:
    """How often a lever `excess` worse than van's rerun clears the tune's gate on one corpus over its
    path (experiments/decide.py, pooled): the keep's look on its first session's prompts, at the keep's
    pass rate, then the confirmation's on all `sessions` sessions pooled (analysis.equivalence.pool), at
    the confirmation's (analysis.equivalence.look_pass_rate of `path_pass` over `corpora` corpora).
    Each session draws its own counts from `floor` (draw_counts) at `n_prompts` prompts."""
    cfg = cfg or EquivalenceConfig()
    keep = at_pass_rate(cfg, look_pass_rate(path_pass, corpora, False, keep_share))
    final = at_pass_rate(cfg, look_pass_rate(path_pass, corpora, True, keep_share))
    keys = (astuple(keep), astuple(final))
    rng = np.random.default_rng(
        [seed, n_prompts, sessions, round(excess * 1e6), zlib.crc32(floor.name.encode())]
    )
    counts = draw_counts(rng, excess, n_prompts, draws * sessions, floor)[:, :3].reshape(draws, sessions, 3)
    # The pooled counts are the sessions' sums (analysis.equivalence.pool adds them; a test holds the
    # two equal). Distinct (first session, sum) pairs are few next to the draws: each judged once.
    pairs = np.concatenate([counts[:, 0, :], counts.sum(axis=1)], axis=1)
    distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
    passed = [
        judged((n_prompts, *first), keep, keys[0]) == PASS
        and judged((n_prompts * sessions, *total), final, keys[1]) == PASS
        for first, total in ((row[:3], row[3:]) for row in distinct.tolist())
    ]
    return float(np.asarray(passed)[inverse.reshape(-1)].mean())


def path_markdown(
    cfg: EquivalenceConfig | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
    floors: Sequence[Floor] = NOISY_FLOORS,
    corpora: Sequence[StudyCorpus] = (*STUDY_CORPORA, *TUNE_CORPORA),
    sessions: Sequence[int] = PATH_SESSIONS,
) -> str:
    """Per corpus (at the prompts the gate decides on) and sessions pooled: an identical lever's pass
    and a +10-point lever's catch over the tune's path (path_pass_rate), % ."""
    cfg = cfg or EquivalenceConfig()
    head = " | ".join(f"{f.name}: identical passes / +10 caught" for f in floors)
    lines = [
        f"| corpus | prompts a session | sessions pooled | {head} |",
        "|---|---:|---:|" + "---|" * len(floors),
    ]
    for corpus in corpora:
        n = gate_prompts(corpus, cfg) if corpus in STUDY_CORPORA else corpus.measured
        for count in sessions:
            cells = []
            for floor in floors:
                identical = path_pass_rate(floor, 0.0, n, count, cfg, draws, seed)
                worse = min(DETECT_EXCESS, 1 - floor.differ_share)
                caught = 1.0 - path_pass_rate(floor, worse, n, count, cfg, draws, seed)
                mark = "" if caught >= DETECT_POWER else " (short)"
                cells.append(f"{100 * identical:.1f} / {100 * caught:.1f}{mark}")
            lines.append(f"| {corpus.name} | {n} | {count} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--path-draws", type=int, default=PATH_DRAWS, help="draws per cell of the path table")
    parser.add_argument("--margin", type=float, default=EquivalenceConfig.noninferiority_margin)
    parser.add_argument("--alpha", type=float, default=EquivalenceConfig.alpha)
    parser.add_argument("--min-prompts", type=int, default=EquivalenceConfig.min_prompts)
    parser.add_argument("--identical-pass-rate", type=float, default=EquivalenceConfig.identical_pass_rate)
    args = parser.parse_args(argv)
    cfg = EquivalenceConfig(
        noninferiority_margin=args.margin,
        alpha=args.alpha,
        min_prompts=args.min_prompts,
        identical_pass_rate=args.identical_pass_rate,
    )
    rates = table(cfg=cfg, draws=args.draws, seed=args.seed)
    print(
        f"Paired equivalence gate: margin {100 * cfg.noninferiority_margin:.0f} points, widened where an "
        f"identical lever would pass < {cfg.identical_pass_rate:.0%}; {1 - cfg.alpha:.0%} upper bound "
        f"(Tango), min_prompts {cfg.min_prompts}, {args.draws:,} draws per cell, each cell its own; "
        "% of verdicts"
    )
    print()
    print(markdown(rates, cfg=cfg))
    print()
    print(
        f"Per study corpus: the gate's prompts to catch a lever {100 * DETECT_EXCESS:.0f} points worse "
        f">= {DETECT_POWER:.0%} (gate_prompts); (stated): the power judge_paired's reason gives "
        "(equivalence.catch_rate), (short): caught below that"
    )
    print()
    print(study_markdown(cfg, args.draws, args.seed))
    keep, final = (look_pass_rate(final=f) for f in (False, True))
    print()
    print(
        f"The tune's path (experiments/decide.py, pooled gate): an identical lever clears every look on "
        f"both corpora >= {PATH_PASS:.0%} of the time; per corpus the keep's look on its first session at "
        f"{keep:.2%}, the confirmation's on every session of the tune that measured the lever, pooled, "
        f"at {final:.2%} (path_pass_rate), {args.path_draws:,} draws per cell; (short): caught below "
        f"{DETECT_POWER:.0%}"
    )
    print()
    print(path_markdown(cfg, args.path_draws, args.seed))


if __name__ == "__main__":
    main()

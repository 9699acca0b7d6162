"""The one rule that says whether a ratio lever / baseline is a real gain, a real loss or noise. Pure.

Every comparison the study makes goes through `judge`: best K and its ties
(analysis.best_k), the final lever and its "x van" (analysis.final, Table 1,
the HTML report), and tune's keep / drop (experiments.decide).

Inputs: the per-repeat throughputs of the lever, x_1..x_n, and of its baseline,
y_1..y_m, each a (session_id, repeat, tok/s) triple, and the drift band b
(relative; NaN when unknown): a number (analysis.drift.drift_band, the whole
session's drift), or a function lag -> band (analysis.drift.band_by_lag), which
judge calls with the comparison's lag: 1 / (fewest pairs in one session) when
paired (each pair's two runs lie in one repeat block of the session), 1 otherwise.

  paired   when at least 2 (session_id, repeat) keys occur on both sides: the
           repeats of one session are interleaved and repeat r of every cell
           sends the same prompts (seed load.seed + r), so each common key is a
           pair. Only the common keys are used; n = number of pairs.
             d_i = ln x_i - ln y_i,  dbar = mean d_i,  s = SD(d_i) (n - 1 in the denominator)
             ln-ratio interval = dbar +- t_{1-a/2, n-1} * s / sqrt(n)
  unpaired otherwise (Welch):
             dbar = mean ln x - mean ln y
             se = sqrt(s_x^2 / n + s_y^2 / m)
             df = se^4 / ((s_x^2/n)^2 / (n-1) + (s_y^2/m)^2 / (m-1))   (Welch-Satterthwaite)
             ln-ratio interval = dbar +- t_{1-a/2, df} * se

  ratio = exp(dbar) (the ratio of geometric means), interval (lo, hi) = exp of the ends,
  two-sided at confidence 1 - a = CONFIDENCE (0.90: each one-sided error 5 %).

  label  "real gain"          iff lo - 1 >  b
         "real loss"          iff hi - 1 < -b
         "within noise"       otherwise
         "not judged (n<2)"   when a side has fewer than 2 repeats (no interval)
  "not judged (drift unknown)"  when the band is NaN (unknown drift): the rule fails closed,
                       so a missing or INVALID anchor run can never turn into a keep.

Noise terms (Judgement.noise_terms): which variance components the interval carries,
each once. Every repeat runs on an engine launch of its own, so a paired difference
and a Welch interval both carry "launch+block" (one launch's offset and one block's
noise per run); an unpaired comparison whose sides come from different sessions also
carries "session". The band carries none of them where the anchors measured a trend
(analysis.drift: the trend's interval, not the launch scatter); where a session has
only its start and end anchor runs, the band is their difference and holds launch
noise a second time (the old, strict rule, kept for such stores).

With b = 0 the rule keeps a change that has no effect at most a/2 = 5 % of the
time (the t-interval's one-sided error); the band only makes it stricter.
`python -m analysis.power` measures its error rates under the H200 noise model.

Best-K ties use the same rule: a larger K is chosen over a smaller one only
when it is a "real gain" over it; ties within noise go to the smaller K.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from scipy.stats import t as student_t

CONFIDENCE = 0.90
GAIN, LOSS, NOISE, NOT_JUDGED = "real gain", "real loss", "within noise", "not judged (n<2)"
# Fail closed: with the drift unknown (a missing or INVALID anchor run, sessions that did not
# all run the same anchor) no interval can be said to clear it, so nothing is judged.
NO_BAND = "not judged (drift unknown)"
UNJUDGED = (NOT_JUDGED, NO_BAND)

Repeat = tuple[str, int, float]  # (session_id, repeat, tok/s)


@dataclass(frozen=True)
class ByLag:
    """A band that depends on the comparison's lag (analysis.drift.band_by_lag): band = of_lag(lag)."""

    of_lag: Callable[[float], float]

    def __call__(self, lag: float) -> float:
        return self.of_lag(lag)


Band = float | ByLag | Callable[[float], float]  # a band, or lag -> band
LAUNCH_BLOCK = "launch+block"
LAUNCH_BLOCK_SESSION = "launch+block+session"


@dataclass(frozen=True)
class Judgement:
    """One comparison: point ratio, its interval, n per side, the band and the label."""

    ratio: float
    lo: float
    hi: float
    n_value: int
    n_reference: int
    band: float
    label: str
    paired: bool
    confidence: float = CONFIDENCE
    # The variance components the interval carries (module doc), e.g. "launch+block".
    noise_terms: str = LAUNCH_BLOCK
    # The share of the session between the two sides' runs the band was scaled to (module doc).
    lag: float = 1.0

    @property
    def real_gain(self) -> bool:
        return self.label == GAIN

    @property
    def real_loss(self) -> bool:
        return self.label == LOSS

    @property
    def judged(self) -> bool:
        return self.label not in UNJUDGED

    def interval_words(self) -> str:
        """'1.58x [1.52, 1.64] 90% CI, n=3/3 paired'."""
        n = f"n={self.n_value}/{self.n_reference}" + (" paired" if self.paired else "")
        if math.isnan(self.lo):  # no interval (n < 2); with the drift unknown the interval still shows
            return f"{self.ratio:.3f}x, {n}"
        return f"{self.ratio:.3f}x [{self.lo:.3f}, {self.hi:.3f}] {self.confidence:.0%} CI, {n}"

    def words(self) -> str:
        """'real gain: 1.58x [1.52, 1.64] 90% CI, n=3/3 paired, band 2.0%'."""
        band = "band unknown" if math.isnan(self.band) else f"band {self.band:.1%}"
        return f"{self.label}: {self.interval_words()}, {band}"

    def as_columns(self, prefix: str = "") -> dict[str, object]:
        """The judgement as flat columns for a table row."""
        return {
            f"{prefix}ratio": self.ratio,
            f"{prefix}ci_lo": self.lo,
            f"{prefix}ci_hi": self.hi,
            f"{prefix}n_value": self.n_value,
            f"{prefix}n_reference": self.n_reference,
            f"{prefix}paired": self.paired,
            f"{prefix}label": self.label,
            f"{prefix}noise_terms": self.noise_terms,
        }


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (scipy.stats.t.ppf)."""
    return float(student_t.ppf(p, df))


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else math.nan
    return mean, var


def _positive(repeats: Iterable[Repeat]) -> list[Repeat]:
    return [r for r in repeats if r[2] is not None and r[2] > 0 and math.isfinite(r[2])]


def label_for(lo: float, hi: float, band: float) -> str:
    """The label of an interval (lo, hi) of the ratio against band b (module doc); NO_BAND when b is NaN."""
    if band is None or math.isnan(band):
        return NO_BAND
    b = band
    if lo - 1.0 > b:
        return GAIN
    if hi - 1.0 < -b:
        return LOSS
    return NOISE


def band_at(band: Band | None, lag: float) -> float:
    """The band for a comparison of lag `lag`: a number as it is, a function called with the lag."""
    if band is None:
        return math.nan
    value = band(lag) if callable(band) else band
    return math.nan if value is None else float(value)


def paired_lag(keys: Iterable[tuple[str, int]]) -> float:
    """1 / the fewest pairs one session holds: each pair's runs share a repeat block (module doc)."""
    per_session = Counter(s for s, _ in keys)
    return 1.0 / min(per_session.values()) if per_session else 1.0


def judge(
    value: Iterable[Repeat],
    reference: Iterable[Repeat],
    band: Band,
    confidence: float = CONFIDENCE,
) -> Judgement:
    """The judgement of value / reference from their per-repeat (session_id, repeat, tok/s) (module doc)."""
    xs, ys = _positive(value), _positive(reference)
    q = 1.0 - (1.0 - confidence) / 2.0
    by_key_x = {(s, r): v for s, r, v in xs}
    by_key_y = {(s, r): v for s, r, v in ys}
    common = sorted(set(by_key_x) & set(by_key_y), key=str)
    if len(common) >= 2:
        lag = paired_lag(common)
        b = band_at(band, lag)
        diffs = [math.log(by_key_x[k]) - math.log(by_key_y[k]) for k in common]
        mean, var = _mean_var(diffs)
        half = t_quantile(q, len(diffs) - 1) * math.sqrt(var / len(diffs))
        lo, hi = math.exp(mean - half), math.exp(mean + half)
        return Judgement(math.exp(mean), lo, hi, len(common), len(common), b,
                         label_for(lo, hi, b), True, confidence, LAUNCH_BLOCK, lag)  # fmt: skip
    b = band_at(band, 1.0)
    sessions = {s for s, _, _ in xs} | {s for s, _, _ in ys}
    terms = LAUNCH_BLOCK_SESSION if len(sessions) > 1 else LAUNCH_BLOCK
    if not xs or not ys:
        nan = math.nan
        return Judgement(nan, nan, nan, len(xs), len(ys), b, NOT_JUDGED, False, confidence, terms)
    mx, vx = _mean_var([math.log(v) for _, _, v in xs])
    my, vy = _mean_var([math.log(v) for _, _, v in ys])
    ratio = math.exp(mx - my)
    if len(xs) < 2 or len(ys) < 2:
        return Judgement(ratio, math.nan, math.nan, len(xs), len(ys), b, NOT_JUDGED, False, confidence, terms)
    ex, ey = vx / len(xs), vy / len(ys)
    se = math.sqrt(ex + ey)
    if se == 0.0:
        lo = hi = ratio
    else:
        df = se**4 / (ex**2 / (len(xs) - 1) + ey**2 / (len(ys) - 1))
        half = t_quantile(q, round(df, 3)) * se
        lo, hi = math.exp(mx - my - half), math.exp(mx - my + half)
    return Judgement(ratio, lo, hi, len(xs), len(ys), b, label_for(lo, hi, b), False, confidence, terms)


def launch_means(repeats: Iterable[Repeat], launches: int) -> tuple[Repeat, ...]:
    """Per session and launch (repeat r runs on launch r mod `launches`, grid/config/expand.py's shared
    launches): the geometric mean of that launch's repeats, as (session_id, launch, tok/s)."""
    logs: dict[tuple[str, int], list[float]] = {}
    for s, r, v in _positive(repeats):
        logs.setdefault((s, int(r) % launches), []).append(math.log(v))
    return tuple((s, j, math.exp(sum(ls) / len(ls))) for (s, j), ls in sorted(logs.items(), key=str))


def judge_by_launch(
    value: Iterable[Repeat],
    reference: Iterable[Repeat],
    band: Band,
    launches: int,
    confidence: float = CONFIDENCE,
) -> Judgement:
    """Van against a lever on launches of their own, `launches` per side, each holding several
    repeats (blocks): launch j of one side paired with launch j of the other (adjacent in the
    run's van, lever, lever, van order: grid.plan.cost.launch_order), over the launch means.

    The blocks of one launch share its offset, so judging them as independent pairs (judge)
    narrows the interval below its confidence when the launch term is large; the launch means
    carry it once, with launches - 1 degrees of freedom ("launch+block"). n is the launch pairs.
    With one repeat per launch this is judge itself.
    """
    if launches < 1:
        raise ValueError(f"launches must be >= 1, got {launches}")
    return judge(launch_means(value, launches), launch_means(reference, launches), band, confidence)


def geomean_repeats(sides: Sequence[Iterable[Repeat]]) -> tuple[Repeat, ...]:
    """Per-repeat values of a geometric mean over several cells (e.g. over corpora).

    For each (session_id, repeat) key present in every side: the geometric mean
    of the sides' values at that key. A repeat that matched on no key because a
    side measured it in another session (an INVALID or failed cell measured
    again on resume lands in the resuming session) is still combined when every
    side holds exactly one value of that repeat: its key is then
    ("<session>+<session>", repeat), so it pairs with nothing in `judge`.
    Other keys missing from a side are left out.
    """
    maps = [{(s, r): v for s, r, v in _positive(side)} for side in sides]
    if not maps:
        return ()
    combined: dict[tuple[str, int], float] = {}
    for key in set.intersection(*(set(m) for m in maps)):
        combined[key] = math.exp(sum(math.log(m[key]) for m in maps) / len(maps))
    matched = {r for _, r in combined}
    for r in set.intersection(*({r for _, r in m} for m in maps)) - matched:
        picks = [[(s, v) for (s, rr), v in m.items() if rr == r] for m in maps]
        if all(len(p) == 1 for p in picks):
            session = "+".join(sorted({p[0][0] for p in picks}))
            combined[(session, r)] = math.exp(sum(math.log(p[0][1]) for p in picks) / len(picks))
    return tuple((s, r, v) for (s, r), v in sorted(combined.items(), key=lambda item: str(item[0])))


def choose_smallest(
    candidates: Sequence[tuple[int, Sequence[Repeat]]],
    band: Band | Callable[[int, int], Band],
    confidence: float = CONFIDENCE,
) -> tuple[int, int] | None:
    """Best-K rule: (best K, top K). top = the K with the highest geometric mean over its repeats
    (the smaller K on exact ties); best = the smallest K over which the top K is not a 'real gain'
    (so ties within noise go to the smaller K). `band` is a number, a ByLag, or a function
    (K, top K) -> either. None when there are no candidates with values.
    """
    scored = []
    for k, values in sorted(candidates, key=lambda c: c[0]):
        logs = [math.log(v) for _, _, v in _positive(values)]
        if logs:
            scored.append((k, values, sum(logs) / len(logs)))
    if not scored:
        return None
    top_k, top_values, _ = max(scored, key=lambda c: c[2])  # first maximum: smaller K on exact ties
    for k, values, _ in scored:
        b = band(k, top_k) if callable(band) and not isinstance(band, ByLag) else band
        if k == top_k or not judge(top_values, values, b, confidence).real_gain:
            return k, top_k
    return top_k, top_k

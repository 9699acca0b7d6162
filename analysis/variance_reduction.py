"""Variance reduction for the paired decision, tried on the stored H200 records (issue 44 item 4). Pure.

The decision (analysis.decision.judge) reads d_i = ln lever_i - ln base_i over pairs i that sent the
same prompts, and decides on dbar = mean d_i with Var(dbar) = s_d^2 / n, df n - 1.

CUPED (regression adjustment) on a pair-level covariate c_i:
    theta = cov(d, c) / var(c)                      (OLS slope of d on c)
    d_adj_i = d_i - theta * (c_i - c_ref)
    estimate = mean d_adj = intercept of the OLS line at c = c_ref
    Var = s_res^2 * (1/n + (cbar - c_ref)^2 / Sxx),  s_res^2 = SSR / (n - 2),  df n - 2
c must not be moved by the lever (`lever_independent`) and must not hold the pair's own throughput
noise (`shares_noise`: the van run of the same pair is half of d, so theta -> -1 whatever the lever).

Why c_ref must come from outside the pairs: in a paired design the covariate is the same for both
arms, so the chance imbalance that CUPED removes in an A/B test (cbar_T - cbar_C) is zero already.
With c_ref = cbar (the textbook recipe), mean d_adj == mean d exactly: the point estimate does not
move, and s_res^2 / n only *looks* smaller; the estimate still carries theta * (cbar - mu_c), so the
"apparent" interval is too narrow (`simulate` measures how much). The variance is really removed
only when mu_c is known beyond the pairs (a corpus's van output length over all its prompts, the
store's long-run van anchor), which is the `c_ref` argument here.

Per-prompt pairing needs per-request rows; the stored CSVs and JSONs hold one row per run (cell), so
the finest pairing the records allow is a prompt slice (the lever crosscheck) or a prompt seed (the
tune's repeats); `python -m analysis.variance_reduction` prints the table of the stored datasets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.decision import CONFIDENCE, Judgement, judge, label_for, t_quantile

LN_TOK = "ln_tok"


@dataclass(frozen=True)
class Reduction:
    """One dataset and covariate: the decision's variance plain and adjusted, and what it saves."""

    n: int
    theta: float
    var_plain: float  # Var(dbar) = s_d^2 / n (ln units squared)
    var_adjusted: float  # s_res^2 / n: what the adjustment leaves, with c_ref known from outside
    df_plain: int
    df_adjusted: int
    half_plain: float  # t_{q, df} * sqrt(var): the ln-ratio interval's half width
    half_adjusted: float
    n_equal_width: int  # the fewest pairs whose adjusted half width <= the plain one at n

    @property
    def removed_share(self) -> float:
        """1 - var_adjusted / var_plain (negative: the adjustment added variance)."""
        return 1.0 - self.var_adjusted / self.var_plain if self.var_plain > 0 else math.nan

    def launches_saved(self, launches_per_pair: float = 2.0) -> float:
        """(n - n_equal_width) pairs' launches: judge runs each side of a pair on a launch of its own."""
        return (self.n - self.n_equal_width) * launches_per_pair


def log_diffs(cells: pd.DataFrame, base: str, lever: str, keys: Sequence[str], tok: str) -> pd.DataFrame:
    """One row per pair (`keys` common to both levers): d = ln lever - ln base, and every other column
    of both sides suffixed _base / _lever (for the covariates and their independence check)."""
    base_side, lever_side = (cells[cells["lever"] == name].drop(columns="lever") for name in (base, lever))
    pairs = base_side.merge(lever_side, on=list(keys), suffixes=("_base", "_lever"))
    pairs["d"] = np.log(pairs[f"{tok}_lever"]) - np.log(pairs[f"{tok}_base"])
    return pairs


def theta_ols(d: np.ndarray, c: np.ndarray) -> float:
    """theta = cov(d, c) / var(c); 0 when c does not vary (nothing to regress on)."""
    var_c = float(np.var(c, ddof=1))
    return float(np.cov(d, c, ddof=1)[0, 1] / var_c) if var_c > 0 else 0.0


def cuped(d: np.ndarray, c: np.ndarray, c_ref: float) -> np.ndarray:
    """d_adj = d - theta * (c - c_ref) (module doc)."""
    return d - theta_ols(d, c) * (c - c_ref)


def adjusted_stats(d: np.ndarray, c: np.ndarray, c_ref: float) -> tuple[float, float, int]:
    """(estimate, its variance, df) of the OLS intercept at c_ref (module doc's formula)."""
    n = len(d)
    theta = theta_ols(d, c)
    resid = d - d.mean() - theta * (c - c.mean())
    s2 = float(resid @ resid) / (n - 2)
    sxx = float(((c - c.mean()) ** 2).sum())
    lever_arm = (c.mean() - c_ref) ** 2 / sxx if sxx > 0 else 0.0
    return float(d.mean() - theta * (c.mean() - c_ref)), s2 * (1.0 / n + lever_arm), n - 2


def half_width(var: float, df: int, confidence: float = CONFIDENCE) -> float:
    """t_{1-a/2, df} * sqrt(var), the ln-ratio interval's half width (analysis.decision.judge)."""
    return t_quantile(1.0 - (1.0 - confidence) / 2.0, df) * math.sqrt(var)


def n_for_width(target: float, sigma2: float, lost_df: int, n_max: int = 10_000) -> int:
    """The fewest pairs n whose half width t_{q, n - 1 - lost_df} * sqrt(sigma2 / n) <= target."""
    n = 2 + lost_df
    while n < n_max and half_width(sigma2 / n, n - 1 - lost_df) > target:
        n += 1
    return n


def evaluate(d: np.ndarray, c: np.ndarray, n_design: int | None = None) -> Reduction:
    """Plain against adjusted at the records' own residual variance, c_ref taken as known (the best
    case, module doc). `n_design`: size the widths at that many pairs instead of len(d)."""
    d, c = np.asarray(d, float), np.asarray(c, float)
    n_data = len(d)
    if n_data < 4:  # theta and the residual need n - 2 >= 2 degrees of freedom to say anything
        raise ValueError(f"need >= 4 pairs to fit theta and its residual, got {n_data}")
    theta = theta_ols(d, c)
    s2_d = float(np.var(d, ddof=1))
    resid = d - d.mean() - theta * (c - c.mean())
    s2_res = float(resid @ resid) / (n_data - 2)
    n = n_design or n_data
    half_plain = half_width(s2_d / n, n - 1)
    return Reduction(n, theta, s2_d / n, s2_res / n, n - 1, n - 2, half_plain,
                     half_width(s2_res / n, n - 2), n_for_width(half_plain, s2_res, 1))  # fmt: skip


def lever_independent(c_base: np.ndarray, c_lever: np.ndarray, tol: float = 0.02) -> tuple[bool, str]:
    """Whether the covariate read on both sides of the same pairs agrees: the paired mean of
    c_lever - c_base within +-tol (ln units) and its 90 % interval holding 0. A lever that moves the
    covariate would let CUPED subtract part of the lever's own effect (a biased estimate)."""
    diff = np.asarray(c_lever, float) - np.asarray(c_base, float)
    mean = float(diff.mean())
    half = half_width(float(np.var(diff, ddof=1)) / len(diff), len(diff) - 1) if len(diff) > 1 else 0.0
    ok = abs(mean) <= tol and abs(mean) <= half + 1e-12
    return ok, f"lever - base {mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}] (tol +-{tol})"


def shares_noise(c: np.ndarray, ln_base: np.ndarray) -> bool:
    """True when c is the pair's own baseline throughput (up to a shift or scale): it then holds half
    of d's noise, and theta fits that noise rather than anything known before the pair ran."""
    c, ln_base = np.asarray(c, float), np.asarray(ln_base, float)
    if np.var(c) == 0 or np.var(ln_base) == 0:
        return False
    return abs(float(np.corrcoef(c, ln_base)[0, 1])) > 0.999


def adjusted_judgement(
    d: np.ndarray, c: np.ndarray, c_ref: float, band: float = 0.0, confidence: float = CONFIDENCE
) -> Judgement:
    """The decision rule's judgement of the CUPED estimate: the OLS intercept at c_ref, its t-interval
    with df n - 2, labelled by analysis.decision.label_for (the rule's own labels and band)."""
    est, var, df = adjusted_stats(np.asarray(d, float), np.asarray(c, float), c_ref)
    half = half_width(var, df, confidence)
    lo, hi = math.exp(est - half), math.exp(est + half)
    return Judgement(math.exp(est), lo, hi, len(d), len(d), band, label_for(lo, hi, band), True, confidence)


@dataclass(frozen=True)
class SimNoise:
    """A pair's noise fitted to a record: d_i = gain + theta * (c_i - mu) + e_i, c_i ~ N(mu, sd_c)."""

    sd_resid: float  # sd of e (ln units)
    theta: float
    sd_c: float


def _repeats(ln_tok: np.ndarray) -> list[tuple[str, int, float]]:
    return [("s", j, float(math.exp(v))) for j, v in enumerate(ln_tok)]


def simulate(
    noise: SimNoise, n: int, gain: float, draws: int, seed: int, band: float = 0.0
) -> dict[str, float]:
    """Keep rates ("real gain") over `draws` simulated paired comparisons of n pairs:
    plain = analysis.decision.judge on the pairs; cuped_known = adjusted_judgement with c_ref = mu
    (known); cuped_sample = judge on the adjusted repeats with c_ref = cbar (the textbook recipe:
    its interval leaves out theta * (cbar - mu)); circular = judge on repeats adjusted by the van
    run's own ln tok/s (a covariate `shares_noise` refuses)."""
    rng = np.random.default_rng(seed)
    kept = dict.fromkeys(("plain", "cuped_known", "cuped_sample", "circular"), 0)
    for _ in range(draws):
        c = rng.normal(0.0, noise.sd_c, n)
        # Each side its own launch noise (half of e's variance each), so the van run is half of d.
        ln_van = 9.2 + rng.normal(0.0, noise.sd_resid / math.sqrt(2), n)
        lever_noise = rng.normal(0.0, noise.sd_resid / math.sqrt(2), n)
        ln_lever = 9.2 + math.log1p(gain) + noise.theta * c + lever_noise
        d = ln_lever - ln_van
        van = _repeats(ln_van)
        kept["plain"] += judge(_repeats(ln_lever), van, band).real_gain
        kept["cuped_known"] += adjusted_judgement(d, c, 0.0, band).real_gain
        kept["cuped_sample"] += judge(_repeats(ln_van + cuped(d, c, float(c.mean()))), van, band).real_gain
        circ = cuped(d, ln_van, float(ln_van.mean()))
        kept["circular"] += judge(_repeats(ln_van + circ), van, band).real_gain
    return {k: v / draws for k, v in kept.items()}


# --- the stored H200 records -------------------------------------------------------------------

BENCH = "docs/benchmarks"


@dataclass(frozen=True)
class Dataset:
    """One stored comparison: its pairs, how they were paired, and the launches one pair costs."""

    name: str
    base: str
    lever: str
    pairing: str
    pairs: pd.DataFrame
    launches_per_pair: float  # 2: each side on a launch of its own; less where launches hold several
    covariates: tuple[str, ...]  # columns read on both sides: c_base is used, c_lever checks it


def tune_cells(root: str = BENCH) -> pd.DataFrame:
    """The 2026-12-01 tune (SmolLM2, code_complete): the replicates (the gate's reruns) left out;
    window output tokens = tok/s * window_s (about the prompts' output length: 79-87 % of requests
    stop at max_tokens); ready_s = the launch's start time, measured before its run."""
    cells = pd.read_csv(f"{root}/2026-12-01-h200-tune-cells.csv")
    cells = cells[~cells["replicate"].astype(bool) & cells["valid"].astype(bool)].copy()
    cells["ln_out_tok"] = np.log(cells["output_tok_per_s"] * cells["window_s"])
    cells["ln_ready_s"] = np.log(cells["engine_ready_s"])
    return cells


def sessions_cells(root: str = BENCH) -> pd.DataFrame:
    """The 2026-12-04 shared-launch run: three levers switched inside each launch, block by block."""
    cells = pd.read_csv(f"{root}/2026-12-04-h200-sessions-cells.csv")
    cells = cells[(cells["run"] == "shared") & cells["valid"].astype(bool)].copy()
    cells["ln_out_tok"] = np.log(cells["output_tok_per_s"] * cells["window_s"])
    cells["block_index"] = cells["block"].astype(float)
    return cells


def levers_runs(root: str = BENCH, calls: Sequence[int] = (2, 3, 4)) -> pd.DataFrame:
    """The 2026-12-04 lever crosscheck's runs (call 1 ran no bestkpad): one row per (call, lever,
    client, prompt slice), both levers sending the same 144-prompt slice."""
    import json

    rows = []
    for call in calls:
        with open(f"{root}/2026-12-04-h200-crosscheck-levers-call{call}.json") as fh:
            rows += [{"call": call, **run} for run in json.load(fh)["runs"]]
    runs = pd.DataFrame(rows)
    runs["ln_out_tok"] = np.log(runs["output_tokens"])
    return runs[["call", "lever", "client", "slice", "tok_s", "ln_out_tok"]]


def datasets(root: str = BENCH) -> list[Dataset]:
    """Every stored H200 comparison with >= 4 pairs of the same prompts (the rest: `small_datasets`)."""
    tune = tune_cells(root)[["lever", "prompt_seed", "output_tok_per_s", "ln_out_tok", "ln_ready_s"]]
    sess = sessions_cells(root)
    sess = sess[["lever", "engine_launch_id", "block", "output_tok_per_s", "ln_out_tok", "block_index"]]
    runs = levers_runs(root)
    out = [Dataset("2026-12-01 tune", "van", "suffix", "prompt seed (across sessions)",
                   log_diffs(tune, "van", "suffix", ["prompt_seed"], "output_tok_per_s"), 2.0,
                   ("ln_out_tok", "ln_ready_s"))]  # fmt: skip
    for lever in ("bestkpad", "dynk"):
        pairs = log_diffs(sess, "suffix", lever, ["engine_launch_id", "block"], "output_tok_per_s")
        # 2 launches carried 3 blocks of 3 levers: 2 / 6 launches per pair of the two compared
        out.append(Dataset("2026-12-04 sessions", "suffix", lever, "launch, block", pairs, 1 / 3,
                           ("ln_out_tok", "block_index")))  # fmt: skip
    pairs = log_diffs(runs, "suffix", "bestkpad", ["call", "client", "slice"], "tok_s")
    out.append(Dataset("2026-12-04 lever crosscheck", "suffix", "bestkpad", "call, client, prompt slice",
                       pairs, 0.5, ("ln_out_tok",)))  # fmt: skip
    return out


def small_datasets(root: str = BENCH) -> list[tuple[str, str, str, int]]:
    """(record, base, lever, pairs) of the comparisons too small for a covariate (< 4 pairs)."""
    tune = tune_cells(root)
    confirm = tune[tune["session_id"].str.endswith("-confirm")]
    n_confirm = len(log_diffs(confirm[["lever", "repeat", "output_tok_per_s"]], "van", "suffix", ["repeat"],
                              "output_tok_per_s"))  # fmt: skip
    pass2 = pd.read_csv(f"{root}/2026-11-30-h200-cells-pass2.csv")
    pass2 = pass2[pass2["valid"].astype(bool)][
        ["lever", "session_id", "corpus", "repeat", "output_tok_per_s"]
    ]
    out = [("2026-12-01 tune confirmation", "van", "suffix", n_confirm)]
    for lever in ("suffix", "bestkpad", "dynk"):
        keys = ["session_id", "corpus", "repeat"]
        out.append(("2026-11-30 pass 2 (8B-shaped)", "van", lever,
                    len(log_diffs(pass2, "van", lever, keys, "output_tok_per_s"))))  # fmt: skip
    return out


def welch_var(pairs: pd.DataFrame, tok: str = "output_tok_per_s") -> float:
    """Var(mean ln lever - mean ln base) read unpaired (judge's Welch branch), for the pairing's gain."""
    x, y = np.log(pairs[f"{tok}_lever"]), np.log(pairs[f"{tok}_base"])
    return float(np.var(x, ddof=1) / len(x) + np.var(y, ddof=1) / len(y))


def rows(root: str = BENCH, n_design: int = 9) -> list[dict[str, object]]:
    """One row per dataset and covariate: the table `main` prints and the record quotes."""
    out: list[dict[str, object]] = []
    for ds in datasets(root):
        p = ds.pairs
        tok = "tok_s" if "tok_s_base" in p else "output_tok_per_s"
        d = p["d"].to_numpy()
        for cov in ds.covariates:
            c_base, c_lever = p[f"{cov}_base"].to_numpy(), p[f"{cov}_lever"].to_numpy()
            ok, why = lever_independent(c_base, c_lever) if cov != "block_index" else (True, "design")
            if shares_noise(c_base, np.log(p[f"{tok}_base"].to_numpy())):
                ok, why = False, "the baseline's own throughput"
            red, at_design = evaluate(d, c_base), evaluate(d, c_base, n_design)
            out.append(
                {
                    "dataset": ds.name,
                    "compare": f"{ds.lever}/{ds.base}",
                    "pairing": ds.pairing,
                    "n": red.n,
                    "ratio": math.exp(float(d.mean())),
                    "welch_var": welch_var(p, tok),
                    "covariate": cov,
                    "sd_c": float(np.std(c_base, ddof=1)),
                    "lever_independent": ok,
                    "check": why,
                    "theta": red.theta,
                    "var_plain": red.var_plain,
                    "var_adjusted": red.var_adjusted,
                    "removed_pct": 100 * red.removed_share,
                    "df_lost": red.df_plain - red.df_adjusted,
                    "half_plain": red.half_plain,
                    "half_adjusted": red.half_adjusted,
                    "launches_saved": red.launches_saved(ds.launches_per_pair),
                    f"launches_saved_n{n_design}": at_design.launches_saved(ds.launches_per_pair),
                }
            )
    return out


def fitted_noise(row: dict[str, object], sd_c: float) -> SimNoise:
    """The simulation's noise from one table row: e's sd from the adjusted variance, theta as fitted."""
    n = int(row["n"])  # type: ignore[call-overload]
    return SimNoise(math.sqrt(float(row["var_adjusted"]) * n), float(row["theta"]), sd_c)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m analysis.variance_reduction", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--root", default=BENCH, help="the folder of the stored records")
    parser.add_argument("--draws", type=int, default=4000, help="simulated comparisons per row (0: none)")
    parser.add_argument("--seed", type=int, default=44, help="the simulation's numpy seed")
    args = parser.parse_args(argv)
    table = rows(args.root)
    cols = ["dataset", "compare", "n", "ratio", "covariate", "lever_independent", "theta", "var_plain",
            "var_adjusted", "removed_pct", "df_lost", "half_plain", "half_adjusted", "launches_saved",
            "launches_saved_n9", "welch_var"]  # fmt: skip
    frame = pd.DataFrame(table)
    print(frame[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print()
    for _, row in frame.iterrows():
        print(f"{row['dataset']} {row['compare']} {row['covariate']}: {row['check']}")
    for name, base, lever, n in small_datasets(args.root):
        print(f"{name} {lever}/{base}: {n} pairs, too few to fit theta (needs >= 4)")
    if args.draws:
        print("\nkeep rates (analysis.decision.judge / adjusted_judgement, band 0), noise fitted per row:")
        for i, row in enumerate(table):
            if not row["lever_independent"]:  # refused covariates are not simulated
                continue
            noise = fitted_noise(row, float(row["sd_c"]))  # type: ignore[arg-type]
            for n in (5, 9):
                for gain in (0.0, 0.2):
                    rates = simulate(noise, n, gain, args.draws, args.seed + i)
                    words = " ".join(f"{k} {v:.1%}" for k, v in rates.items())
                    print(
                        f"  {row['dataset']} {row['compare']} {row['covariate']} n={n} +{gain:.0%}: {words}"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

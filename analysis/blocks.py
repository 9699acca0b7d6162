"""Levers that share an engine launch, compared paired by block, the launch as a cluster. Pure.

suffix K, bestkpad K and dynk with max K = K launch with the same vLLM argv, so one launch can
run them all: in each block (the cells of one launch that share a corpus and a prompt draw;
identity session_id, engine_launch_id, corpus and `block`, or the repeat where a store has no
`block` column) every lever runs on the same prompts, one after the other, with a reset between,
in alternating order (A B, B A, ...: grid/config/expand.py's shared_blocks). A ratio inside a block has
no launch term and no prompt term; but a pair's ratio may itself move from launch to launch (a
lever x launch interaction: the launch's state favours one lever), so the blocks of one launch
are not independent draws of it, and the launch is the unit the interval counts.

For each model, launch configuration (the lever configurations its launches ran, e.g.
`bestkpad-k8+dynk-k8+suffix-k8`) and pair of lever configurations B / A that share blocks:

  d_lj = ln tok/s(B, block j of launch l) - ln tok/s(A, same block)    (both VALID)
  m_l  = launch l's mean of d_lj; where the launch ran both orders, the mean of its two order
         means ((mean over B-after-A blocks + mean over B-before-A blocks) / 2), so a period
         effect (whatever runs second gains) cancels even when the orders are unbalanced
  L >= 2 launches:  ratio = exp(mean_l m_l),
                    interval = exp(mean m_l +- t_{1-a/2, L-1} * SD(m_l) / sqrt(L))
                    (exact for normal launch means, whatever the lever x launch interaction;
                    with 2 launches t has 1 df and the interval is wide: that is the honest
                    width of two launches). With a 5 % interaction, 10,000 draws: 95.4 % covered
                    at 2 launches x 10 blocks (10 % block to block), 95.2 % at 3 x 6 (3 %);
                    the interval over blocks as independent draws covered 76.0 % and 57.6 %
  L = 1:            the interval is over the launch's blocks (t on n - 2 df with both orders,
                    n - 1 otherwise): it carries no launch term and holds for that launch
                    only, not for the lever on another launch (`interval_over` says so)

Carry-over check: the order effect is exp(delta), delta the difference of d between blocks
where B ran after A and blocks where B ran before (from the cells' engine_cell_index), estimated
within launches (least squares on launch indicators + the order; t on n - L_o - 1 df, L_o the
launches with a known order). A symmetric period effect shows in it and cancels in the ratio; a
one-sided carry-over (A's cell leaves the engine in a state that helps or hurts the B cell after
it, not the reverse) shows in it as well but biases the ratio by half of it, which no ABBA
design can remove: an order interval that excludes 1 is flagged in the table. A is the lever
earlier in REFERENCE_ORDER (van, suffix, bestkpad, dynk, then by name), so the ratios read
"lever over its simpler relative"; A and B of one lever are ordered by K. sd_lever_launch is the
lever x launch interaction's sd (one-way analysis of variance of d on the launch; NaN with one
launch).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd

from analysis.decision import t_quantile
from analysis.repeats import valid_only
from analysis.variance import block_of

CONFIDENCE = 0.95
REFERENCE_ORDER = ("van", "suffix", "bestkpad", "dynk")
PAIR_COLUMNS = [
    "model",
    "launch_config",
    "lever",
    "reference",
    "n_blocks",
    "n_launches",
    "n_sessions",
    "ratio",
    "ci_lo",
    "ci_hi",
    "interval_over",
    "df",
    "sd_lever_launch",
    "order_effect",
    "order_lo",
    "order_hi",
    "order_df",
    "ratios",
    "launch_ratios",
]
BLOCK_KEYS = ["session_id", "launch", "corpus", "block"]
# interval_over: what the interval counts as its independent units.
OVER_LAUNCHES = "launch means"
OVER_BLOCKS = "one launch's blocks: no launch term"


def config_label(lever: str, k: object) -> str:
    """A lever configuration as cell labels write it: lever, or lever-kK."""
    return f"{lever}-k{int(k)}" if k is not None and not pd.isna(k) and int(k) else str(lever)


def _order(label: str) -> tuple[int, str, int]:
    lever, _, k = label.partition("-k")
    rank = REFERENCE_ORDER.index(lever) if lever in REFERENCE_ORDER else len(REFERENCE_ORDER)
    return rank, lever, int(k) if k.isdigit() else 0


def _with_blocks(cells: pd.DataFrame) -> pd.DataFrame:
    """Every cell with a launch id, with its launch (session/launch id), block, config and launch_config.

    The launch configuration is read from every cell of the launch, INVALID ones too, so that one
    INVALID cell does not move its launch to another group.
    """
    cells = cells[cells["engine_launch_id"].notna()]
    out = cells.assign(
        launch=cells["session_id"].astype(str) + "/" + cells["engine_launch_id"].astype(str),
        block=block_of(cells),
        config=[config_label(lv, k) for lv, k in zip(cells["lever"], cells["k"], strict=True)],
        position=cells["engine_cell_index"].astype(float) if "engine_cell_index" in cells else math.nan,
    )
    configs = out.groupby("launch")["config"].agg(lambda s: "+".join(sorted(set(s), key=_order)))
    return out.assign(launch_config=out["launch"].map(configs))


def block_ratios(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, launch_config, lever, reference, block) with both sides VALID: the ratio.

    `cells`: analysis.load.measured_cells. Columns: model, launch_config, lever, reference, and
    BLOCK_KEYS, ratio (lever's tok/s over the reference's in that block; cells of one config
    that share a block enter as their geometric mean), lever_second (1.0 when the lever ran
    after the reference in that block, 0.0 before, NaN where the store has no engine_cell_index).
    """
    columns = ["model", "launch_config", "lever", "reference", *BLOCK_KEYS, "ratio", "lever_second"]
    if cells.empty or "engine_launch_id" not in cells:
        return pd.DataFrame(columns=columns)
    tagged = _with_blocks(cells)
    tagged, _ = valid_only(tagged)
    tagged = tagged[tagged["output_tok_per_s"].astype(float) > 0]
    if tagged.empty:
        return pd.DataFrame(columns=columns)
    tagged = tagged.assign(log_tok_s=np.log(tagged["output_tok_per_s"].astype(float)))
    keys = ["model", "launch_config", *BLOCK_KEYS]
    means = tagged.groupby([*keys, "config"])[["log_tok_s", "position"]].mean()
    wide, at = means["log_tok_s"].unstack("config"), means["position"].unstack("config")
    frames = []
    for reference, lever in combinations(sorted(wide.columns, key=_order), 2):
        both = wide[[reference, lever]].dropna()
        gap = at.loc[both.index, lever] - at.loc[both.index, reference]
        frame = both.index.to_frame(index=False)
        frames.append(
            frame.assign(
                lever=lever,
                reference=reference,
                ratio=np.exp(both[lever].to_numpy() - both[reference].to_numpy()),
                lever_second=np.where(gap.isna() | gap.eq(0), np.nan, gap.gt(0).astype(float)),
            )
        )
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def interval(logs: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(exp(mean), lo, hi) of ln ratios treated as independent: t on len - 1 df; lo, hi NaN below 2."""
    mean = float(np.mean(logs))
    if len(logs) < 2:
        return math.exp(mean), math.nan, math.nan
    se = float(np.std(logs, ddof=1)) / math.sqrt(len(logs))
    return _exp_interval(mean, se, len(logs) - 1, confidence)


def _exp_interval(mean: float, se: float, df: float, confidence: float) -> tuple[float, float, float]:
    """exp(mean +- t_{(1+confidence)/2, df} x se): analysis.decision's t quantile, not a second one."""
    if not df >= 1:
        return math.exp(mean), math.nan, math.nan
    half = t_quantile(0.5 + confidence / 2, df) * se
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def _both_orders(second: np.ndarray) -> bool:
    return bool(np.any(second == 1.0) and np.any(second == 0.0))


def launch_mean(logs: np.ndarray, second: np.ndarray) -> float:
    """One launch's mean ln ratio: the mean of its two order means where it ran both orders."""
    if _both_orders(second):
        return float((logs[second == 1.0].mean() + logs[second == 0.0].mean()) / 2)
    return float(logs.mean())


def one_launch_interval(
    logs: np.ndarray, second: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float, float, float]:
    """(ratio, lo, hi, df) over the blocks of one launch (module doc), the order in the model."""
    if not _both_orders(second):
        ratio, lo, hi = interval(logs, confidence)
        return ratio, lo, hi, float(len(logs) - 1)
    after, before = logs[second == 1.0], logs[second == 0.0]
    df = len(logs) - 2
    if df < 1:  # one block each way: the order takes the last df
        return math.exp(launch_mean(logs, second)), math.nan, math.nan, 0.0
    pooled = (float(((after - after.mean()) ** 2).sum()) + float(((before - before.mean()) ** 2).sum())) / df
    se = math.sqrt(pooled * (1 / len(after) + 1 / len(before)) / 4)
    return (*_exp_interval(launch_mean(logs, second), se, df, confidence), float(df))


def order_effect(
    logs: np.ndarray, launches: np.ndarray, second: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float, float, float]:
    """(exp(delta), lo, hi, df): d's shift when B ran after A, within launches (module doc).

    NaN where no launch ran both orders, the order is not recorded, or no df is left.
    """
    known = ~np.isnan(second)
    logs, launches, second = logs[known], launches[known], second[known]
    if not any(_both_orders(second[launches == launch]) for launch in set(launches)):
        return math.nan, math.nan, math.nan, math.nan
    codes, _ = pd.factorize(launches)
    design = np.zeros((len(logs), codes.max() + 2))
    design[np.arange(len(logs)), codes] = 1.0
    design[:, -1] = second
    coef, _, rank, _ = np.linalg.lstsq(design, logs, rcond=None)
    df = len(logs) - rank
    if df < 1:
        return math.exp(coef[-1]), math.nan, math.nan, 0.0
    residual = logs - design @ coef
    covariance = np.linalg.pinv(design.T @ design) * float(residual @ residual) / df
    ratio, lo, hi = _exp_interval(float(coef[-1]), math.sqrt(covariance[-1, -1]), df, confidence)
    return ratio, lo, hi, float(df)


def lever_launch_sd(logs: np.ndarray, launches: np.ndarray) -> float:
    """sd of the lever x launch interaction: one-way ANOVA of d on the launch (method of moments,
    clamped at 0); NaN with one launch or no block left within launches."""
    groups = [logs[launches == launch] for launch in pd.unique(launches)]
    n, k = len(logs), len(groups)
    if k < 2 or n - k < 1:
        return math.nan
    within = sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / (n - k)
    between = sum(len(g) * (g.mean() - logs.mean()) ** 2 for g in groups) / (k - 1)
    n0 = (n - sum(len(g) ** 2 for g in groups) / n) / (k - 1)
    return math.sqrt(max(0.0, (between - within) / n0))


def pair_row(group: pd.DataFrame, confidence: float = CONFIDENCE) -> dict[str, object]:
    """One pair's columns (PAIR_COLUMNS less its identity) from its block_ratios rows."""
    logs = np.log(group["ratio"].to_numpy(float))
    launches = group["launch"].to_numpy(str)
    second = group["lever_second"].to_numpy(float)
    names = sorted(set(launches))
    means = np.array([launch_mean(logs[launches == x], second[launches == x]) for x in names])
    if len(names) >= 2:
        ratio, lo, hi = interval(means, confidence)
        over, df = OVER_LAUNCHES, float(len(names) - 1)
    else:
        ratio, lo, hi, df = one_launch_interval(logs, second, confidence)
        over = OVER_BLOCKS
    order, order_lo, order_hi, order_df = order_effect(logs, launches, second, confidence)
    return {
        "n_blocks": len(group),
        "n_launches": len(names),
        "n_sessions": group["session_id"].nunique(),
        "ratio": ratio,
        "ci_lo": lo,
        "ci_hi": hi,
        "interval_over": over,
        "df": df,
        "sd_lever_launch": lever_launch_sd(logs, launches),
        "order_effect": order,
        "order_lo": order_lo,
        "order_hi": order_hi,
        "order_df": order_df,
        "ratios": tuple(group["ratio"].round(6)),
        "launch_ratios": tuple(np.exp(means).round(6)),
    }


def paired_by_block(cells: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per (model, launch_config, lever, reference): the ratio, its interval with the launch as the
    cluster, and the order effect (module doc).

    Columns PAIR_COLUMNS: ratios, the per-block ratios (in block order); launch_ratios, each
    launch's mean ratio (m_l). Empty when no launch ran two lever configurations on one block.
    """
    ratios = block_ratios(cells)
    if ratios.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    rows = []
    for (model, config, lever, reference), group in ratios.groupby(
        ["model", "launch_config", "lever", "reference"], sort=True
    ):
        identity = {"model": model, "launch_config": config, "lever": lever, "reference": reference}
        rows.append({**identity, **pair_row(group, confidence)})
    table = pd.DataFrame(rows, columns=PAIR_COLUMNS)
    table.attrs["confidence"] = confidence
    return table


PAIR_HEADERS = [
    "model",
    "launch config",
    "lever / reference",
    "ratio [95% CI]",
    "interval over (df)",
    "blocks",
    "launches",
    "order effect [95% CI]",
]
PAIR_NOTE = (
    "paired by block: levers that share an engine launch, each block's ratio on the same prompts; "
    "the 95% t-interval counts launches, not blocks (a lever x launch interaction moves every block "
    "of a launch alike): over the launch means with launches - 1 df, or, with one launch, over its "
    "blocks with no launch term (it holds for that launch only). order effect: the ratio when the "
    "lever ran after its reference over when it ran before, within launches; '!' where its interval "
    "excludes 1: carry-over or a period effect, and the ratio (the mean of both orders) is biased by "
    "half of any one-sided carry-over (analysis/blocks.py)"
)


def ratio_words(ratio: float, lo: float, hi: float) -> str:
    """'1.100x [1.080, 1.120]', or '1.100x (no interval)'."""
    if math.isnan(lo):
        return f"{ratio:.3f}x (no interval)"
    return f"{ratio:.3f}x [{lo:.3f}, {hi:.3f}]"


def over_words(over: str, df: float) -> str:
    """'launch means (1)', "one launch's blocks: no launch term (10)"; df 0: none left for it."""
    return f"{over} ({df:.0f})"


def order_words(ratio: float, lo: float, hi: float) -> str:
    """'1.050x [1.020, 1.081] !' (the interval excludes 1), '0.998x [0.970, 1.027]', or '-'."""
    if math.isnan(ratio):
        return "- (order not recorded, or one order only)"
    flag = " !" if not math.isnan(lo) and (lo > 1.0 or hi < 1.0) else ""
    return ratio_words(ratio, lo, hi) + flag


def display_rows(table: pd.DataFrame) -> list[list[str]]:
    """paired_by_block's rows as text, PAIR_HEADERS' order."""
    return [
        [
            str(row.model),
            str(row.launch_config),
            f"{row.lever} / {row.reference}",
            ratio_words(row.ratio, row.ci_lo, row.ci_hi),
            over_words(row.interval_over, row.df),
            str(row.n_blocks),
            str(row.n_launches),
            order_words(row.order_effect, row.order_lo, row.order_hi),
        ]
        for row in table.itertuples(index=False)
    ]

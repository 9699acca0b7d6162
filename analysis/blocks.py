"""Levers that share an engine launch, compared paired by block. Pure.

suffix K, bestkpad K and dynk with max K = K launch with the same vLLM argv, so one launch can
run them all: in each block (the cells of one launch that share a corpus and a prompt draw;
identity session_id, engine_launch_id, corpus and `block`, or the repeat where a store has no
`block` column) every lever runs on the same prompts, one after the other, with a reset between.
A ratio inside a block has no launch term and no prompt term.

For each model, launch configuration (the lever configurations its launches ran, e.g.
`bestkpad-k8+dynk-k8+suffix-k8`) and pair of lever configurations B / A that share blocks:

  d_j = ln tok/s(B, block j) - ln tok/s(A, block j)     over the n blocks holding both (VALID)
  ratio = exp(mean d_j)          (the geometric mean of the per-block ratios)
  interval = exp(mean d_j +- t_{1-a/2, n-1} * SD(d_j) / sqrt(n)),   1 - a = CONFIDENCE (95 %)

The interval treats blocks as independent. Where a pair's ratio itself moves from launch to
launch (a lever x launch interaction), blocks of one launch are not, and the interval reads
narrow: compare n_launches, and the per-launch ratios (`launch_ratios`), before trusting it.
A is the lever earlier in REFERENCE_ORDER (van, suffix, bestkpad, dynk, then by name), so the
ratios read "lever over its simpler relative"; A and B of one lever are ordered by K.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

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
    "ratios",
    "launch_ratios",
]
BLOCK_KEYS = ["session_id", "launch", "corpus", "block"]


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
    )
    configs = out.groupby("launch")["config"].agg(lambda s: "+".join(sorted(set(s), key=_order)))
    return out.assign(launch_config=out["launch"].map(configs))


def block_ratios(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, launch_config, lever, reference, block) with both sides VALID: the ratio.

    `cells`: analysis.load.measured_cells. Columns: model, launch_config, lever, reference, and
    BLOCK_KEYS, ratio (lever's tok/s over the reference's in that block; cells of one config
    that share a block enter as their geometric mean).
    """
    columns = ["model", "launch_config", "lever", "reference", *BLOCK_KEYS, "ratio"]
    if cells.empty or "engine_launch_id" not in cells:
        return pd.DataFrame(columns=columns)
    tagged = _with_blocks(cells)
    tagged, _ = valid_only(tagged)
    tagged = tagged[tagged["output_tok_per_s"].astype(float) > 0]
    if tagged.empty:
        return pd.DataFrame(columns=columns)
    tagged = tagged.assign(log_tok_s=np.log(tagged["output_tok_per_s"].astype(float)))
    keys = ["model", "launch_config", *BLOCK_KEYS]
    wide = tagged.pivot_table(index=keys, columns="config", values="log_tok_s", aggfunc="mean")
    rows = []
    for reference, lever in combinations(sorted(wide.columns, key=_order), 2):
        both = wide[[reference, lever]].dropna()
        for key, (ref, val) in zip(both.index, both.to_numpy(), strict=True):
            record = dict(zip(keys, key, strict=True))
            rows.append({**record, "lever": lever, "reference": reference, "ratio": math.exp(val - ref)})
    return pd.DataFrame(rows, columns=columns)


def interval(logs: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(exp(mean), lo, hi) of ln ratios: the t-interval of the module doc; lo, hi NaN below 2 values."""
    mean = float(np.mean(logs))
    if len(logs) < 2:
        return math.exp(mean), math.nan, math.nan
    half = float(student_t.ppf(0.5 + confidence / 2, len(logs) - 1)) * float(np.std(logs, ddof=1))
    half /= math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def paired_by_block(cells: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per (model, launch_config, lever, reference): geometric mean ratio over blocks, its t-interval.

    Columns PAIR_COLUMNS: ratios, the per-block ratios (in block order); launch_ratios, each
    launch's geometric mean ratio. Empty when no launch ran two lever configurations on one block.
    """
    ratios = block_ratios(cells)
    if ratios.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    rows = []
    for (model, config, lever, reference), group in ratios.groupby(
        ["model", "launch_config", "lever", "reference"], sort=True
    ):
        logs = np.log(group["ratio"].to_numpy(float))
        ratio, lo, hi = interval(logs, confidence)
        per_launch = group.groupby("launch", sort=True)["ratio"].agg(lambda r: math.exp(np.log(r).mean()))
        rows.append(
            {
                "model": model,
                "launch_config": config,
                "lever": lever,
                "reference": reference,
                "n_blocks": len(group),
                "n_launches": group["launch"].nunique(),
                "n_sessions": group["session_id"].nunique(),
                "ratio": ratio,
                "ci_lo": lo,
                "ci_hi": hi,
                "ratios": tuple(group["ratio"].round(6)),
                "launch_ratios": tuple(per_launch.round(6)),
            }
        )
    table = pd.DataFrame(rows, columns=PAIR_COLUMNS)
    table.attrs["confidence"] = confidence
    return table


PAIR_HEADERS = ["model", "launch config", "lever / reference", "ratio [95% CI]", "blocks", "launches"]
PAIR_NOTE = (
    "paired by block: levers that share an engine launch, each block's ratio on the same prompts "
    "(no launch term); geometric mean over blocks with its 95% t-interval over blocks "
    "(analysis/blocks.py). Blocks of one launch share the launch: with few launches read the "
    "interval as narrow"
)


def ratio_words(ratio: float, lo: float, hi: float) -> str:
    """'1.100x [1.080, 1.120]', or '1.100x (one block: no interval)'."""
    if math.isnan(lo):
        return f"{ratio:.3f}x (one block: no interval)"
    return f"{ratio:.3f}x [{lo:.3f}, {hi:.3f}]"


def display_rows(table: pd.DataFrame) -> list[list[str]]:
    """paired_by_block's rows as text, PAIR_HEADERS' order."""
    return [
        [
            str(row.model),
            str(row.launch_config),
            f"{row.lever} / {row.reference}",
            ratio_words(row.ratio, row.ci_lo, row.ci_hi),
            str(row.n_blocks),
            str(row.n_launches),
        ]
        for row in table.itertuples(index=False)
    ]

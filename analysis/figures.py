"""The study's figures as matplotlib Figures (no display needed: the Agg backend).

Figure 1: speedup over van per model as bars, the geometric mean as a line.
Figure 2: best K per model x corpus as a heat map, one panel per swept lever.
Figure 3: anchor throughput at the start and end of every session (the drift).
matplotlib is a report/notebook dependency, not a runtime one: imported here only.
Figures are built without pyplot (no global state, no display backend needed).
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure

from analysis.decision import GAIN, LOSS


def _empty(message: str) -> Figure:
    fig = Figure(figsize=(6, 1.5))
    ax = fig.subplots()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def speedup_bars(table1: pd.DataFrame, geomean: float, pct: str = "90%") -> Figure:
    """Figure 1: final lever's output tok/s / van's per model; labels name the lever and the verdict."""
    rows = table1.dropna(subset=["speedup_vs_van"])
    if rows.empty:
        return _empty("no model has both van and a lever measured")
    fig = Figure(figsize=(max(6.0, 1.1 * len(rows) + 2), 4.5))
    ax = fig.subplots()
    labels = rows["label"] if "label" in rows else pd.Series("", index=rows.index)
    colors = ["tab:blue" if label == GAIN else "tab:red" if label == LOSS else "tab:gray" for label in labels]
    low = rows["speedup_vs_van"] - rows.get("ci_lo", rows["speedup_vs_van"])
    high = rows.get("ci_hi", rows["speedup_vs_van"]) - rows["speedup_vs_van"]
    errors = [low.fillna(0).clip(lower=0).to_numpy(), high.fillna(0).clip(lower=0).to_numpy()]
    bars = ax.bar(rows["model"], rows["speedup_vs_van"], color=colors, yerr=errors, capsize=3)
    for bar, label in zip(bars, rows["final_lever"], strict=True):
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                    fontsize=8, xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ax.axhline(1.0, color="black", linewidth=0.8)
    if not math.isnan(geomean):
        ax.axhline(geomean, color="tab:red", linestyle="--", label=f"geometric mean {geomean:.2f}x")
        ax.legend(loc="upper right")
    ax.set_ylabel("output tok/s, x over van")
    # Two lines: one bar's figure is 6 inches wide, too narrow for the legend in the title.
    ax.set_title(
        f"Figure 1: final lever vs van, {pct} interval\n(blue: real gain; grey: within noise or not judged)",
        fontsize=10,
    )
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig


def best_k_heatmap(best_k: pd.DataFrame) -> Figure:
    """Figure 2: best K per model (rows) x corpus (columns), one panel per swept lever."""
    if best_k.empty:
        return _empty("no lever was swept over several K")
    levers = sorted(set(best_k["lever"]))
    fig = Figure(figsize=(6.5 * len(levers), 1.5 + 0.6 * best_k["model"].nunique()))
    axes = fig.subplots(1, len(levers), squeeze=False)
    for ax, lever in zip(axes[0], levers, strict=True):
        grid = best_k[best_k["lever"] == lever].pivot(index="model", columns="corpus", values="best_k")
        image = ax.imshow(grid.to_numpy(dtype=float), cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(grid.columns)), grid.columns, rotation=30, ha="right")
        ax.set_yticks(range(len(grid.index)), grid.index)
        for (i, j), value in pd.DataFrame(grid.to_numpy()).stack().items():
            ax.text(j, i, f"{int(value)}", ha="center", va="center", color="white")
        ax.set_title(f"Figure 2: best K of {lever}")
        fig.colorbar(image, ax=ax, label="K")
    fig.tight_layout()
    return fig


def anchor_drift(drift: pd.DataFrame) -> Figure:
    """Figure 3: anchor tok/s at each session's start and end, sessions in time order."""
    if drift.empty:
        return _empty("no anchor runs in the store")
    rows = drift.sort_values("session_id").reset_index(drop=True)
    fig = Figure(figsize=(max(6.0, 0.9 * len(rows) + 2), 4))
    ax = fig.subplots()
    x = range(len(rows))
    ax.vlines(x, rows["anchor_start_tok_per_s"], rows["anchor_end_tok_per_s"], color="gray")
    ax.plot(x, rows["anchor_start_tok_per_s"], "o", label="start")
    ax.plot(x, rows["anchor_end_tok_per_s"], "s", label="end")
    for i, rel in zip(x, rows["drift_rel"], strict=True):
        text = "n/a" if pd.isna(rel) else f"{rel:.1%}"
        ax.annotate(text, (i, rows["anchor_mean_tok_per_s"].iloc[i]), xytext=(6, 0),
                    textcoords="offset points", fontsize=8)  # fmt: skip
    ax.set_xticks(list(x), rows["session_id"], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("anchor output tok/s")
    ax.set_title("Figure 3: anchor throughput per session (label: drift band)")
    ax.legend()
    fig.tight_layout()
    return fig

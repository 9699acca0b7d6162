"""The study's figures as matplotlib Figures (no display needed: the Agg backend).

Figure 1: x over van per model whose final lever is not van (held out, else the selection's, hatched).
Figure 2: best K per model x corpus as a heat map, one panel per swept lever.
Figure 3: anchor throughput at the start and end of every session (the drift).
matplotlib is a report/notebook dependency, not a runtime one: imported here only.
Figures are built without pyplot (no global state, no display backend needed).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from analysis.decision import GAIN, LOSS


def _empty(message: str) -> Figure:
    fig = Figure(figsize=(6, 1.5))
    ax = fig.subplots()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def speedup_nothing_to_draw(table1: pd.DataFrame) -> str | None:
    """Why Figure 1 has nothing to draw (None when it has): it draws only a measured ratio of a lever
    other than van; van over van is 1 by definition, never a measurement."""
    if table1.empty or "final_lever" not in table1:
        return "no model has a final lever yet"
    levers = table1[table1["final_lever"].notna() & (table1["final_lever"] != "van")]
    if levers.empty:
        return (
            "every model's final lever is van (no lever was a real gain over it), and van over van is 1 "
            "by definition"
        )
    if levers[["confirmed_x", "speedup_vs_van"]].isna().all(axis=None):
        return "no model has both van and its final lever measured"
    return None


def speedup_bars(table1: pd.DataFrame) -> Figure:
    """Figure 1: per model whose final lever is not van, the held-out x over van with its 90 % interval;
    where no confirmation was measured, the selection's, hatched and labelled as reading high."""
    why = speedup_nothing_to_draw(table1)
    if why:
        return _empty(f"nothing to draw: {why}")
    rows = table1[table1["final_lever"].notna() & (table1["final_lever"] != "van")]
    held = rows["confirmed_x"].notna()
    rows = rows[held | rows["speedup_vs_van"].notna()]
    held = rows["confirmed_x"].notna()
    x = rows["confirmed_x"].where(held, rows["speedup_vs_van"]).astype(float)
    lo = rows["confirmed_ci_lo"].where(held, rows["ci_lo"]).astype(float)
    hi = rows["confirmed_ci_hi"].where(held, rows["ci_hi"]).astype(float)
    labels = rows["confirmed_label"].where(held, rows["label"])
    fig = Figure(figsize=(max(6.0, 1.1 * len(rows) + 2), 4.5))
    ax = fig.subplots()
    colors = ["tab:blue" if label == GAIN else "tab:red" if label == LOSS else "tab:gray" for label in labels]
    errors = [(x - lo).fillna(0).clip(lower=0).to_numpy(), (hi - x).fillna(0).clip(lower=0).to_numpy()]
    bars = ax.bar(rows["model"], x, color=colors, yerr=errors, capsize=3)
    for bar, lever, is_held in zip(bars, rows["final_lever"], held, strict=True):
        if not is_held:
            bar.set_hatch("//")
            bar.set_alpha(0.5)
        text = lever if is_held else f"{lever}\n(selection: reads high)"
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                    fontsize=8, xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("output tok/s, x over van")
    ax.set_title(
        "Figure 1: final lever vs van, held out (solid) or selection (hatched), with its interval\n"
        "(blue: real gain; red: real loss; grey: within noise or not judged)",
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

"""The README's one picture: output tok/s of every cell of the H200 tune record, van against suffix K=8.

Drawn from a committed record (docs/benchmarks/2026-12-01-h200-tune-cells.csv), so it can be made again
on any machine: `.venv/bin/python scripts/readme_figure.py` writes docs/img/h200-tune-cells.png.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from vocab.paths import project_path

CSV = project_path("docs/benchmarks/2026-12-01-h200-tune-cells.csv")
PNG = project_path("docs/img/h200-tune-cells.png")


def main() -> None:
    cells = pd.read_csv(CSV)
    cells = cells[cells["valid"]]
    arms = [("van", cells[cells["lever"] == "van"]), ("suffix K=8", cells[cells["lever"] == "suffix"])]
    fig, ax = plt.subplots(figsize=(6.4, 2.6), dpi=100)
    for y, (_, rows) in enumerate(arms):
        tok_s = rows["output_tok_per_s"] / 1000
        ax.scatter(tok_s, [y] * len(tok_s), alpha=0.6, s=36)
        ax.plot([tok_s.median()] * 2, [y - 0.3, y + 0.3], color="black")
        ax.annotate(f"median {tok_s.median():.1f}k (n={len(tok_s)})", (tok_s.median(), y + 0.33), fontsize=8)
    ax.set_yticks(range(len(arms)), [name for name, _ in arms])
    ax.set_ylim(-0.6, len(arms) - 0.2)
    ax.set_xlabel("output tokens/s per cell (thousands)")
    ax.set_title("SmolLM2-135M, one H200, code_complete: every measured cell (2026-12-01)", fontsize=9)
    fig.tight_layout()
    PNG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PNG)
    print(f"wrote {PNG}")


if __name__ == "__main__":
    main()

"""Group cells into engine launches, and choose launches against blocks per launch.

Pure but for `python -m grid.plan.groups` (main), whose --store reads a store's variance components.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.decision import CONFIDENCE, t_quantile
from vocab.cells import Cell, EngineSpec
from vocab.errors import StoreError
from vocab.groups import EngineGroup


def group_by_engine(cells: list[Cell]) -> list[EngineGroup]:
    """Cells sharing a launch (engine spec, or shared argv: Cell.launch_key) and launch number become
    one group, in first-seen order; largest TP first. A shared group's spec is its first cell's."""
    order: dict[tuple[str, int], list[Cell]] = {}
    specs: dict[tuple[str, int], EngineSpec] = {}
    for cell in cells:
        key = (cell.launch_key, cell.launch)
        order.setdefault(key, []).append(cell)
        specs.setdefault(key, cell.engine_spec)
    groups = [EngineGroup(specs[key], tuple(group)) for key, group in order.items()]
    # Largest bundles first limits fragmentation; sorted() is stable within a size.
    return sorted(groups, key=lambda g: -g.gpus)


@dataclass(frozen=True)
class LaunchSplit:
    """How to spend repeats on van against a lever: `launches` per side, `blocks` per launch."""

    launches: int
    blocks: int
    se_ln_ratio: float  # sd of the launch-paired mean ln ratio (analysis.decision.judge_by_launch)
    half_width: float  # its interval's half-width at `confidence` (t, launches - 1 df)
    gpu_s: float  # both sides: 2 x launches x (engine start + blocks x block time)


def launch_split(
    sd_launch: float,
    sd_block: float,
    start_s: float,
    block_s: float,
    half_width: float,
    confidence: float = CONFIDENCE,
    max_blocks: int = 16,
    max_launches: int = 500,
) -> LaunchSplit | None:
    """The cheapest (launches, blocks per launch) whose launch-paired interval of van against a
    lever has at most `half_width` (ln units), from the measured variance components
    (analysis/variance.py: sd_launch between launches, sd_block within one) and the costs of an
    engine start and of one block (seconds). None when no split up to the caps reaches it.

    var(mean ln ratio) = 2 (sd_launch^2 + sd_block^2 / blocks) / launches, at a cost of
    2 launches (start_s + blocks block_s); every blocks in 1..max_blocks is tried with the fewest
    launches (>= 2) that reach the width. This is Kalibera & Jones's two-level choice: the
    continuous optimum is blocks = sqrt(start_s sd_block^2 / (block_s sd_launch^2)), so a launch
    term that dominates, or a cheap start, buys more launches and fewer blocks in each.
    """
    for name, value in (("sd_launch", sd_launch), ("sd_block", sd_block), ("start_s", start_s),
                        ("block_s", block_s)):  # fmt: skip
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"launch_split: {name} must be a finite number >= 0, got {value}")
    if not half_width > 0:
        raise ValueError(f"launch_split: half_width must be > 0, got {half_width}")
    q = 1.0 - (1.0 - confidence) / 2.0
    best: LaunchSplit | None = None
    for blocks in range(1, max_blocks + 1):
        per_launch = 2.0 * (sd_launch**2 + sd_block**2 / blocks)
        for launches in range(2, max_launches + 1):
            se = math.sqrt(per_launch / launches)
            width = t_quantile(q, launches - 1) * se
            if width <= half_width:
                cost = 2 * launches * (start_s + blocks * block_s)
                if best is None or cost < best.gpu_s - 1e-9:
                    best = LaunchSplit(launches, blocks, se, width, cost)
                break
    return best


def sds_from_store(path: str, model: str | None, levers: list[str]) -> tuple[float, float, str]:
    """(sd_launch, sd_block, words): the root mean square over `levers` (of `model`) of the
    store's variance components (analysis/variance.py); NaN where the store cannot estimate one."""
    return lever_sds_from_store(path, model, levers)[:3]


def lever_sds_from_store(
    path: str, model: str | None, levers: list[str]
) -> tuple[float, float, str, dict[str, float]]:
    """sds_from_store's three, and each lever's own launch sd (the root mean square over its K): the
    launch term differs by lever (a drafting lever's host work moves with the launch), and a tune
    that simulates its design (experiments.tune_size) can give each lever its own. A lever whose
    launch term the store cannot estimate is left out of the dict."""
    from analysis.power import components_from_store

    table = components_from_store(path)
    rows = table[table["lever"].isin(levers)]
    if model is not None:
        rows = rows[rows["model"] == model]
    if rows.empty:
        return math.nan, math.nan, f"no variance components for {levers} in {path}", {}
    launch = math.sqrt(float((rows["sd_launch"] ** 2).mean()))
    block = math.sqrt(float((rows["sd_block"] ** 2).mean()))
    by_lever = {
        str(lever): math.sqrt(float((group["sd_launch"] ** 2).mean()))
        for lever, group in rows.groupby("lever", sort=True)
    }
    by_lever = {lever: sd for lever, sd in by_lever.items() if math.isfinite(sd)}
    labels = ", ".join(f"{r.lever} k{r.k}" for r in rows.itertuples())
    each = ", ".join(f"{lever} {sd:.4f}" for lever, sd in by_lever.items())
    words = f"sd_launch {launch:.4f} ({each}), sd_block {block:.4f} from {labels} in {path}"
    return launch, block, words, by_lever


def main(argv: list[str] | None = None) -> int:
    """`python -m grid.plan.groups --sd-launch 0.118 --sd-block 0.10 --start-s 120 --block-s 30
    --half-width 0.05`
    (or `--store results --levers van suffix` for the sds the store measured)."""
    import argparse

    about = "launches against blocks per launch for van against a lever (grid.plan.groups.launch_split)"
    parser = argparse.ArgumentParser(prog="python -m grid.plan.groups", description=about)
    parser.add_argument("--sd-launch", type=float, help="between-launch sd of ln tok/s")
    parser.add_argument("--sd-block", type=float, help="block-to-block sd of ln tok/s within a launch")
    parser.add_argument("--store", help="read both sds from this store's variance components instead")
    parser.add_argument("--model", help="with --store: this model's rows")
    parser.add_argument("--levers", nargs="+", default=["van", "suffix"], help="with --store: these levers")
    parser.add_argument("--start-s", type=float, required=True, help="engine start, seconds")
    parser.add_argument("--block-s", type=float, required=True, help="one block (one cell's load), seconds")
    parser.add_argument("--half-width", type=float, required=True, help="wanted 90%% half-width, ln units")
    args = parser.parse_args(argv)
    sd_launch, sd_block = args.sd_launch, args.sd_block
    if args.store:
        try:
            sd_launch, sd_block, words = sds_from_store(args.store, args.model, args.levers)
        except (StoreError, OSError) as exc:  # not a store, or one that does not answer (StoreUnreachable)
            from store.fs import os_error_line

            print(f"error: {os_error_line(exc)}")  # stdout, as this command's other lines
            return 2
        print(words)
        if math.isnan(sd_launch) or math.isnan(sd_block):
            print(
                "the store cannot estimate both sds (one launch, or one block per launch): "
                "give --sd-launch and --sd-block"
            )
            return 2
    if sd_launch is None or sd_block is None:
        print("give --sd-launch and --sd-block, or --store to read them from a store")
        return 2
    try:
        split = launch_split(sd_launch, sd_block, args.start_s, args.block_s, args.half_width)
    except ValueError as exc:
        print(exc)
        return 2
    if split is None:
        print(f"no split up to 500 launches x 16 blocks reaches a half-width of {args.half_width:g}")
        return 1
    hours = split.gpu_s / 3600
    print(
        f"{split.launches} launches per side x {split.blocks} blocks per launch: half-width "
        f"{split.half_width:.4f} (se {split.se_ln_ratio:.4f}), {hours:.2f} GPU-hours for both sides"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m grid plan`: what a grid will cost, as a table or JSON, before any launch."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grid.checks.preflight import Inspection, check_config, inspect
from grid.checks.prompt_audit import corpus_rows
from grid.config.compose import compose_config, pop_format
from grid.config.expand import expand_all, to_config
from grid.plan.anchor import anchor_cells
from grid.plan.cost import GroupCost, group_cost, launch_order
from grid.plan.groups import group_by_engine
from grid.plan.hours import gpu_hours_at
from grid.plan.model_runner import refusal, runner, runner_note
from grid.plan.store_costs import with_store_costs
from vocab.console import make_console


def plan_summary(overrides: list[str]) -> dict[str, Any]:
    """The plan of the grid `overrides` describe, as plain data.

    Counts what `run` would launch on an empty store: the grid's engine groups
    and, with grid.anchor.enabled, the drift anchor's two launches (first and
    last). Reads the corpora as `run` does; what would stop `run` before launch
    (missing or unreadable corpora, prompts too long for the context, weights
    not here, an unwritable store) is listed under `warnings`.
    """
    config = to_config(compose_config(overrides))
    check_config(config, command="plan")
    config = with_store_costs(config)
    expansion = expand_all(config)
    groups = group_by_engine(expansion.cells)
    anchors = anchor_cells(config)
    anchor_groups = [g for cell in anchors for g in group_by_engine([cell])] if anchors else []
    costs = [group_cost(g, config.plan) for g in groups]
    anchor_costs = [group_cost(g, config.plan) for g in anchor_groups]
    by_model: dict[str, list[GroupCost]] = defaultdict(list)
    for cost in costs:
        by_model[cost.group.spec.model.name].append(cost)
    anchors_by_model: dict[str, list[GroupCost]] = defaultdict(list)
    for cost in anchor_costs:
        anchors_by_model[cost.group.spec.model.name].append(cost)
    bundles = []
    for model in list(by_model) + [m for m in anchors_by_model if m not in by_model]:
        group_costs, anchor_group_costs = by_model[model], anchors_by_model[model]
        first = (group_costs or anchor_group_costs)[0]
        bundles.append(
            {
                "model": model,
                "gpus": first.group.gpus,
                "engine_launches": len(group_costs) + len(anchor_group_costs),
                "anchor_launches": len(anchor_group_costs),
                "cells": sum(len(c.group.cells) for c in group_costs),
                "levers": sorted({c.group.spec.label.split("/", 1)[1] for c in group_costs}),
                "gpu_hours": sum(c.gpu_s for c in (*group_costs, *anchor_group_costs)) / 3600,
                "rate_tok_per_s": first.rate_tok_per_s,
                "rate_source": first.rate_source,
                "engine_start_s": first.start_s,
                "start_source": first.start_source,
            }
        )
    phases = [anchor_groups[:1], launch_order(groups, config.plan), anchor_groups[1:]]
    found = inspect(config, [g for phase in phases for g in phase])
    window = window_warnings(costs, config, {row.corpus: row.distinct_available for row in found.audit})
    specs = list({cell.engine_spec.key: cell.engine_spec for cell in expansion.cells}.values())
    refused = sorted({why for spec in specs if (why := refusal(spec))})
    return {
        "experiment": config.name,
        "cluster": config.cluster.name,
        "cells": len(expansion.cells),
        "engine_launches": len(costs) + len(anchor_costs),
        "anchor_launches": len(anchor_costs),
        "gpu_hours": sum(c.gpu_s for c in (*costs, *anchor_costs)) / 3600,
        "bundles": bundles,
        "skipped": [asdict(s) for s in expansion.skipped],
        "corpora": prompt_rows(found),
        "prompt_fit": [fit.row() for fit in found.fits],
        "warnings": [*found.problems, *window, *refused],
        # Which vLLM model runner each lever gets on a GPU (grid/plan/model_runner.py; docs/compat.md).
        "model_runner": {
            "by_lever": {spec.lever.name: runner(spec) for spec in specs},
            "note": runner_note(specs),
        },
        "cost_model": {
            "formula": "(engine_start_s + (num_prompts + warmup_requests) x max_tokens x output_fill "
            "/ rate per cell) x gpus, a warm-up run to max_tokens (load.warmup_ignore_eos) at a fill of 1; "
            "the drift anchor's two launches (grid.anchor) included",
            **asdict(config.plan),
            "load": asdict(config.load),
        },
    }


def window_warnings(costs: list[GroupCost], config: Any, distinct: dict[str, int]) -> list[str]:
    """Per model and corpus, a warning where its prompts cannot fill gates.min_window_s at the
    expected rate (grid/plan/window_fix.py plan_warning), with the override that would."""
    from grid.plan.window_fix import Measured, plan_warning

    said: dict[tuple[str, str], str | None] = {}
    for cost in costs:
        for cell in cost.group.cells:
            key = (cell.engine_spec.model.name, cell.corpus.name)
            if key in said:
                continue
            m = Measured(
                corpus=cell.corpus.name,
                reasons="",
                window_s=None,
                output_tok_per_s=cost.rate_tok_per_s,
                mean_output_tokens=cell.load.max_tokens * config.plan.output_fill,
                num_prompts=cell.load.num_prompts,
                warmup_requests=cell.load.warmup_requests,
                concurrency=cell.load.concurrency,
                max_tokens=cell.load.max_tokens,
                distinct_prompts=distinct.get(cell.corpus.name),
            )
            line = plan_warning(m, cost.rate_source, config.gates.min_window_s, config.gates.min_requests)
            said[key] = f"{key[0]}: {line}" if line else None
    return [line for line in said.values() if line]


REUSE_MODES = ("auto", "per_spec", "shared")


def reuse_modes(overrides: list[str]) -> list[dict[str, Any]]:
    """The same cells under each grid.engine_reuse: launches, GPU-hours, the share of GPU time in
    measured loads (issue 29: auto was the study's mode before per_spec and shared)."""
    rows = []
    for mode in REUSE_MODES:
        config = with_store_costs(to_config(compose_config([*overrides, f"grid.engine_reuse={mode}"])))
        groups = group_by_engine(expand_all(config).cells)
        anchors = anchor_cells(config) or []
        groups += [g for cell in anchors for g in group_by_engine([cell])]
        costs = [group_cost(g, config.plan) for g in groups]
        gpu_s = sum(c.gpu_s for c in costs)
        measured_gpu_s = sum(c.measured_s * c.group.gpus for c in costs)
        rows.append(
            {
                "engine_reuse": mode,
                "engine_launches": len(costs),
                "gpu_hours": gpu_s / 3600,
                "measured_share": measured_gpu_s / gpu_s if gpu_s else None,
            }
        )
    return rows


def render_reuse_modes(rows: list[dict[str, Any]], current: str, console: Console) -> None:
    table = Table(title="the same cells under each grid.engine_reuse")
    for header in ("engine_reuse", "launches", "GPU-h", "in measured loads"):
        table.add_column(header, justify="left" if header == "engine_reuse" else "right", no_wrap=True)
    base = rows[0]
    for row in rows:
        mark = " (this plan)" if row["engine_reuse"] == current else ""
        table.add_row(
            row["engine_reuse"] + mark,
            f"{row['engine_launches']:,} ({row['engine_launches'] / base['engine_launches']:.0%})",
            f"{row['gpu_hours']:,.1f}",
            f"{row['measured_share']:.0%}" if row["measured_share"] is not None else "-",
        )
    console.print(table)
    console.print(
        "in measured loads: GPU time inside the cells' measured loads (warm-up and engine starts are the "
        "rest); shared resets the engine before each cell (docs/reset.md)",
        soft_wrap=True,
    )


def confirm_cost(overrides: list[str], config: Any) -> dict[str, Any]:
    """What grid.confirm adds at most: every model confirming a drafting lever (bestkpad K=8 stands in:
    the same launches as suffix or dynk) against van on the final corpus, its own run with anchors."""
    from analysis.final import FINAL_CORPUS

    corpus = FINAL_CORPUS if FINAL_CORPUS in config.grid.corpora else config.grid.corpora[0]
    repeats = config.grid.confirm.repeats or config.grid.repeats
    argv = [*overrides, f"grid.corpora=[{corpus}]", "grid.levers=[van,bestkpad]", "++grid.ks.bestkpad=[8]",
            "grid.confirm.enabled=false"]  # fmt: skip
    cells_h, anchor_h = gpu_hours_at(argv, repeats)
    models = len(config.grid.models)
    return {"corpus": corpus, "repeats": repeats, "models": models, "gpu_hours": cells_h + models * anchor_h}


def sequential_cost(overrides: list[str], draws: int = 200) -> dict[str, Any]:
    """Expected GPU-hours of grid.sequential's looks against fixed repeats, under the H200's measured noise.

    Mean repeats per comparison come from analysis.sequential_power (the looks judged by
    analysis.sequential, with no effect and with +10 % on every lever); the grid's cells cost
    linearly in repeats between whole numbers, and every look after the first adds one run per
    model, each with its two anchor launches.
    """
    from analysis.sequential_power import expected_repeats_and_sessions
    from analysis.simulated_sessions import NOISES

    config = to_config(compose_config(overrides))
    seq = config.grid.sequential
    noise = NOISES[1]
    models = len(config.grid.models)
    fixed, anchor_h = gpu_hours_at(overrides, config.grid.repeats)
    cap, _ = gpu_hours_at(overrides, seq.looks[-1])
    out: dict[str, Any] = {
        "noise": noise.name,
        "looks": list(seq.looks),
        "min_gain": seq.min_gain,
        "draws": draws,
        "fixed_repeats": config.grid.repeats,
        "fixed_gpu_hours": fixed + anchor_h,
        "cap_gpu_hours": cap + anchor_h,
    }
    for scenario, (mean_n, sessions) in zip(
        ("no_effect", "gain_10"),
        expected_repeats_and_sessions(noise, seq.looks, seq.min_gain, draws),
        strict=True,
    ):
        low = int(mean_n)
        low_h, _ = gpu_hours_at(overrides, max(low, 1))
        high_h, _ = gpu_hours_at(overrides, low + 1)
        cells = low_h + (mean_n - low) * (high_h - low_h)
        out[scenario] = {
            "mean_repeats": mean_n,
            "mean_looks": sessions,
            "gpu_hours": cells + anchor_h + (sessions - 1) * models * anchor_h,
        }
    return out


def render_sequential(cost: dict[str, Any], console: Console) -> None:
    looks = ",".join(map(str, cost["looks"]))
    console.print(
        f"repeats only where needed (grid.sequential, looks {looks}, min_gain {cost['min_gain']:.0%}), under "
        f"{cost['noise']} ({cost['draws']} simulated comparisons per scenario): expected "
        f"{cost['no_effect']['gpu_hours']:,.1f} GPU-hours when no lever works "
        f"({cost['no_effect']['mean_repeats']:.1f} repeats per comparison) and "
        f"{cost['gain_10']['gpu_hours']:,.1f} when every lever gives +10% "
        f"({cost['gain_10']['mean_repeats']:.1f}); fixed grid.repeats={cost['fixed_repeats']}: "
        f"{cost['fixed_gpu_hours']:,.1f}, fixed at the cap ({cost['looks'][-1]}): "
        f"{cost['cap_gpu_hours']:,.1f}",
        soft_wrap=True,
    )


def prompt_rows(found: Inspection) -> list[dict[str, Any]]:
    """Per corpus: distinct prompts, warm-up and measured per cell, repeated measured prompts, skipped
    bad rows, prompts too long for the context; a corpus that cannot be read is a row with its error.

    Read from the corpus files as `run` would send them (grid/checks/prompt_audit.py).
    """
    rows = corpus_rows(found.audit, found.corpora)
    too_long: dict[str, int] = defaultdict(int)
    for fit in found.fits:
        too_long[fit.corpus] = max(too_long[fit.corpus], fit.too_long)
    for row in rows:
        if not row.get("error"):
            row["too_long"] = too_long.get(str(row["corpus"]), 0)
    return rows


def corpora_title(rows: list[dict[str, Any]]) -> str:
    """The table's title says what is true of these rows: that every measured prompt is new to its
    engine and every prompt fits only when no row counts one repeated, too long or unreadable."""

    def total(key: str) -> int:
        return sum(int(row.get(key) or 0) for row in rows if not row.get("error"))

    unreadable = sum(1 for row in rows if row.get("error"))
    said = [
        f"{n:,} measured prompts repeated on their engine"
        if (n := total("prompts_reused"))
        else "every measured prompt new to its engine",
        f"{n:,} prompts too long for their engine's context"
        if (n := total("too_long"))
        else "every prompt fits",
    ]
    if unreadable:
        said.append(f"{unreadable} corpus{'' if unreadable == 1 else 'es'} unreadable")
    return f"prompts per corpus ({', '.join(said)})"


def render_corpora(rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(title=corpora_title(rows))
    for header in ("corpus", "distinct", "warm-up", "measured", "repeated", "bad rows skipped", "too long"):
        table.add_column(header, justify="left" if header == "corpus" else "right")
    for row in rows:
        if row.get("error"):
            table.add_row(str(row["corpus"]), "[red]unreadable[/]", "", "", "", "", "")
            continue
        reused, skipped, too_long = (
            int(row.get(k) or 0) for k in ("prompts_reused", "skipped_rows", "too_long")
        )
        table.add_row(
            str(row["corpus"]),
            str(row["distinct_prompts"]),
            str(row["warmup"]),
            str(row["measured"]),
            f"[red]{reused}[/]" if reused else "0",
            f"[yellow]{skipped}[/]" if skipped else "0",
            f"[red]{too_long}[/]" if too_long else "0",
        )
    console.print(table)


def render_plan(summary: dict[str, Any], console: Console) -> None:
    table = Table(title=f"plan: experiment={summary['experiment']} cluster={summary['cluster']}")
    for header in ("model", "GPUs", "launches", "cells", "GPU-h", "tok/s*", "start s"):
        table.add_column(header, justify="left" if header == "model" else "right", no_wrap=True)
    marks = {"measured in the store": " m"}
    for b in summary["bundles"]:
        mark = marks.get(b["rate_source"], "" if b["rate_source"].startswith("conf/model") else " †")
        table.add_row(
            b["model"],
            str(b["gpus"]),
            str(b["engine_launches"]),
            str(b["cells"]),
            f"{b['gpu_hours']:,.1f}",
            f"{b['rate_tok_per_s']:,.0f}{mark}",
            f"{b['engine_start_s']:,.0f}{' m' if b['start_source'].startswith('measured') else ''}",
        )
    console.print(table)
    console.print(
        "* expected output tok/s per engine: the model file's expected_tok_per_s; "
        "† plan.rates or plan.default_tok_per_s; m the median of the store's VALID cells of the model "
        "(plan.from_store=false ignores them)"
    )
    anchor = summary["anchor_launches"]
    console.print(
        f"{summary['cells']} cells on {summary['engine_launches']} engine launches"
        + (f" ({anchor} of them the drift anchor's)" if anchor else "")
        + f", {summary['gpu_hours']:,.1f} GPU-hours estimated"
    )
    by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
    for skip in summary["skipped"]:
        by_reason[(skip["lever"], skip["reason"])].append(skip["model"])
    for (lever, reason), models in by_reason.items():
        console.print(f"skipped lever {lever} for {', '.join(models)}: {reason}")
    console.print(
        f"cost model: {summary['cost_model']['formula']}; override a rate with +plan.rates.<model>=<tok/s>"
    )
    if summary["model_runner"]["note"]:
        console.print(summary["model_runner"]["note"], soft_wrap=True)
    render_corpora(summary["corpora"], console)
    for warning in summary["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def plan(overrides: list[str], console: Console | None = None) -> int:
    console = console or make_console()
    fmt, rest = pop_format(overrides)
    summary = plan_summary(rest)
    config = to_config(compose_config(rest))
    if config.grid.sequential.enabled:
        summary["sequential"] = sequential_cost(rest)
    if config.grid.confirm.enabled:
        summary["confirm"] = confirm_cost(rest, config)
    summary["engine_reuse_modes"] = reuse_modes(rest)
    if fmt == "json":
        print(json.dumps(summary, indent=2))
    else:
        render_plan(summary, console)
        render_reuse_modes(summary["engine_reuse_modes"], config.grid.engine_reuse, console)
        if "sequential" in summary:
            render_sequential(summary["sequential"], console)
        if "confirm" in summary:
            c = summary["confirm"]
            console.print(
                f"then the held-out confirmation (grid.confirm): at most {c['gpu_hours']:,.1f} GPU-hours "
                f"more (each of {c['models']} models' final configuration and van on {c['corpus']}, "
                f"{c['repeats']} repeats, a run of its own with anchors; none where the final lever is van)",
                soft_wrap=True,
            )
    return 0


def simulate_plan(overrides: list[str], console: Console | None = None) -> dict[str, Any]:
    """Simulated makespan of the grid on its cluster description, against the lower bound."""
    from grid.plan.simulate import SimJob, simulate
    from vocab.errors import ConfigError

    console = console or make_console()
    config = to_config(compose_config(overrides))
    check_config(config, command="simulate")
    config = with_store_costs(config)
    node_gpus = [node.gpus for node in config.cluster.nodes for _ in range(node.count)]
    if not node_gpus and not config.ray.use_gpus:
        # A local CPU run (cluster=local): this machine, one engine per ray.cpus_per_engine cores, as
        # Ray's placement groups give them (each engine group needs `tp` slots, 1 on the CPU engine).
        node_gpus = [max(1, int((os.cpu_count() or 1) // config.ray.cpus_per_engine))]
        console.print(
            f"cluster '{config.cluster.name}': this machine, {os.cpu_count()} cores / ray.cpus_per_engine "
            f"{config.ray.cpus_per_engine:g} = {node_gpus[0]} engine(s) at a time"
        )
    if not node_gpus:
        raise ConfigError(
            f"cluster '{config.cluster.name}' describes no nodes; pick one, e.g. cluster=h200x8_4nodes"
        )
    groups = launch_order(group_by_engine(expand_all(config).cells), config.plan)
    # The drift anchor's two launches too (grid.anchor), so the count is plan's; placed first and
    # last as run places them, their whole time counts (nothing overlaps them).
    anchors = [g for cell in anchor_cells(config) or [] for g in group_by_engine([cell])]
    jobs = [SimJob(g.spec.label, g.gpus, group_cost(g, config.plan).wall_s) for g in groups]
    anchor_s = sum(group_cost(g, config.plan).wall_s for g in anchors)
    limit = config.ray.max_in_flight or sum(node_gpus)
    result = simulate(jobs, node_gpus, limit)
    summary = {
        "experiment": config.name,
        "cluster": config.cluster.name,
        "nodes_gpus": node_gpus,
        "engine_launches": len(jobs) + len(anchors),
        "anchor_launches": len(anchors),
        "makespan_h": (result.makespan_s + anchor_s) / 3600,
        "lower_bound_h": (result.lower_bound_s + anchor_s) / 3600,
        "ratio": (result.makespan_s + anchor_s) / (result.lower_bound_s + anchor_s),
    }
    slots = "GPU" if config.ray.use_gpus or config.cluster.nodes else "engine slot"
    console.print(
        f"{summary['experiment']} on {summary['cluster']} ({plural(len(node_gpus), 'node')}, "
        f"{plural(sum(node_gpus), slots)}): "
        f"{plural(summary['engine_launches'], 'engine launch', 'engine launches')} "
        f"({summary['anchor_launches']} of them the drift anchor's, first and last), "
        f"makespan {summary['makespan_h']:.1f} h, lower bound {summary['lower_bound_h']:.1f} h "
        f"(x{summary['ratio']:.3f})"
    )
    return summary

"""`python -m grid plan`: what a grid will cost, as a table or JSON, before any launch."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from grid.compose import compose_config, pop_format
from grid.cost import GroupCost, group_cost, launch_order
from grid.errors import ConfigError
from grid.expand import expand_all, to_config
from grid.paths import project_path
from grid.plan import EngineGroup, group_by_engine
from grid.prompt_audit import audit_groups, corpus_rows
from grid.schema import Config


def plan_summary(overrides: list[str]) -> dict[str, Any]:
    """The plan of the grid `overrides` describe, as plain data."""
    config = to_config(compose_config(overrides))
    expansion = expand_all(config)
    groups = group_by_engine(expansion.cells)
    costs = [group_cost(g, config.plan) for g in groups]
    by_model: dict[str, list[GroupCost]] = defaultdict(list)
    for cost in costs:
        by_model[cost.group.spec.model.name].append(cost)
    bundles = [
        {
            "model": model,
            "gpus": group_costs[0].group.gpus,
            "engine_launches": len(group_costs),
            "cells": sum(len(c.group.cells) for c in group_costs),
            "levers": sorted({c.group.spec.label.split("/", 1)[1] for c in group_costs}),
            "gpu_hours": sum(c.gpu_s for c in group_costs) / 3600,
            "rate_tok_per_s": group_costs[0].rate_tok_per_s,
            "rate_source": group_costs[0].rate_source,
        }
        for model, group_costs in by_model.items()
    ]
    return {
        "experiment": config.name,
        "cluster": config.cluster.name,
        "cells": len(expansion.cells),
        "engine_launches": len(costs),
        "gpu_hours": sum(c.gpu_s for c in costs) / 3600,
        "bundles": bundles,
        "skipped": [asdict(s) for s in expansion.skipped],
        "corpora": prompt_rows(groups, config),
        "cost_model": {
            "formula": "(engine_start_s + (num_prompts + warmup_requests) x max_tokens x output_fill "
            "/ rate per cell) x gpus",
            **asdict(config.plan),
            "load": asdict(config.load),
        },
    }


def prompt_rows(groups: list[EngineGroup], config: Config) -> list[dict[str, Any]]:
    """Per corpus: distinct prompts available, warm-up and measured per cell, repeated measured prompts.

    Read from the corpus files as `run` would send them (grid/prompt_audit.py);
    a corpus not built here reads as an error row instead of stopping the plan.
    """
    try:
        audit = audit_groups(
            groups, project_path(config.paths.data_dir), config.gates.equivalence.probe_prompts
        )
    except ConfigError as exc:
        return [{"corpus": None, "error": str(exc)}]
    return corpus_rows(audit)


def render_corpora(rows: list[dict[str, Any]], console: Console) -> None:
    if rows and rows[0].get("error"):
        console.print(f"[yellow]corpora not read:[/] {rows[0]['error']}")
        return
    table = Table(title="prompts per corpus (every measured prompt new to its engine)")
    for header in ("corpus", "distinct", "warm-up", "measured", "repeated"):
        table.add_column(header, justify="left" if header == "corpus" else "right")
    for row in rows:
        reused = int(row["prompts_reused"])
        table.add_row(
            str(row["corpus"]),
            str(row["distinct_prompts"]),
            str(row["warmup"]),
            str(row["measured"]),
            f"[red]{reused}[/]" if reused else "0",
        )
    console.print(table)


def render_plan(summary: dict[str, Any], console: Console) -> None:
    table = Table(title=f"plan: experiment={summary['experiment']} cluster={summary['cluster']}")
    for header in ("model", "GPUs", "launches", "cells", "GPU-h", "tok/s*"):
        table.add_column(header, justify="left" if header == "model" else "right", no_wrap=True)
    for b in summary["bundles"]:
        mark = "" if b["rate_source"].startswith("conf/model") else " †"
        table.add_row(
            b["model"],
            str(b["gpus"]),
            str(b["engine_launches"]),
            str(b["cells"]),
            f"{b['gpu_hours']:,.1f}",
            f"{b['rate_tok_per_s']:,.0f}{mark}",
        )
    console.print(table)
    console.print(
        "* expected output tok/s per engine: the model file's expected_tok_per_s; "
        "† plan.rates or plan.default_tok_per_s"
    )
    console.print(
        f"{summary['cells']} cells on {summary['engine_launches']} engine launches, "
        f"{summary['gpu_hours']:,.1f} GPU-hours estimated"
    )
    by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
    for skip in summary["skipped"]:
        by_reason[(skip["lever"], skip["reason"])].append(skip["model"])
    for (lever, reason), models in by_reason.items():
        console.print(f"skipped lever {lever} for {', '.join(models)}: {reason}")
    console.print(
        f"cost model: {summary['cost_model']['formula']}; override a rate with +plan.rates.<model>=<tok/s>"
    )
    render_corpora(summary["corpora"], console)


def plan(overrides: list[str], console: Console | None = None) -> int:
    console = console or Console()
    fmt, rest = pop_format(overrides)
    summary = plan_summary(rest)
    if fmt == "json":
        print(json.dumps(summary, indent=2))
    else:
        render_plan(summary, console)
    return 0


def simulate_plan(overrides: list[str], console: Console | None = None) -> dict[str, Any]:
    """Simulated makespan of the grid on its cluster description, against the lower bound."""
    from grid.errors import ConfigError
    from grid.simulate import SimJob, simulate

    console = console or Console()
    config = to_config(compose_config(overrides))
    node_gpus = [node.gpus for node in config.cluster.nodes for _ in range(node.count)]
    if not node_gpus:
        raise ConfigError(
            f"cluster '{config.cluster.name}' describes no nodes; pick one, e.g. cluster=h200x8_4nodes"
        )
    groups = launch_order(group_by_engine(expand_all(config).cells), config.plan)
    jobs = [SimJob(g.spec.label, g.gpus, group_cost(g, config.plan).wall_s) for g in groups]
    limit = config.ray.max_in_flight or sum(node_gpus)
    result = simulate(jobs, node_gpus, limit)
    summary = {
        "experiment": config.name,
        "cluster": config.cluster.name,
        "nodes_gpus": node_gpus,
        "engine_launches": len(jobs),
        "makespan_h": result.makespan_s / 3600,
        "lower_bound_h": result.lower_bound_s / 3600,
        "ratio": result.ratio,
    }
    console.print(
        f"{summary['experiment']} on {summary['cluster']} ({len(node_gpus)} nodes, {sum(node_gpus)} GPUs): "
        f"{len(jobs)} engine launches, makespan {summary['makespan_h']:.1f} h, lower bound "
        f"{summary['lower_bound_h']:.1f} h (x{result.ratio:.3f})"
    )
    return summary

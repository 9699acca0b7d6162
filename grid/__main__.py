"""Command line: `python -m grid <command> [key=value ...]`; `python -m grid <command> --help`.

The commands, what each takes beyond the config's Hydra overrides, and the docs/ section that
explains it are in COMMANDS: `--help` (alone or after a command) prints them from there.
"""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import dataclass, fields

from vocab.errors import GridError

HELP_FLAGS = ("-h", "--help")
PY = "python -m grid"


@dataclass(frozen=True)
class Command:
    summary: str
    # (example arguments, what they do), the common ones first
    examples: tuple[tuple[str, str], ...]
    readme: str  # the docs/ section that explains it (DOC_PAGES: on which page)
    flags: tuple[str, ...] = ()  # the command's own --options
    # The config sections it reads: `--help` lists each one's keys from the schema (vocab/schema.py).
    sections: tuple[str, ...] = ("paths",)


# The page each command's section is on (moved from the README by issue 47; docs/README.md indexes them).
DOC_PAGES = {
    "Running a grid": "docs/running.md",
    "The store": "docs/store-files.md",
    "Corpora and your own traces": "docs/own-traffic.md",
    "Decisions and their error rates": "docs/decisions.md",
    "Analysis, report, notebooks": "docs/analysis.md",
}

COMMANDS = {
    "run": Command(
        "run what the store lacks of the grid (default experiment: smoke), then print the summary table",
        (
            ("experiment=smoke", "the demo grid (conf/experiment/*.yaml lists the others)"),
            ("grid.levers=[van,suffix] grid.models=[tiny] grid.corpora=[chat_bench]", "narrow the grid"),
            ("grid.repeats=3", "repeats per cell (x van is judged from n>=2)"),
            ("+grid.ks.suffix=[4,8] load.max_tokens=128", "K per lever; the load's fields"),
            ("run.mode=failed", "rerun only failed cells (resume: the default; all: everything)"),
            ("run.force=[tiny/suffix-k8]", "run again the cells whose label or key starts so"),
            ("paths.store=/data/results cluster=h200x8_4nodes", "where results go; which cluster"),
        ),
        "Running a grid",
        sections=("grid", "load", "run", "gates", "ray", "engine", "paths"),
    ),
    "status": Command(
        "done / invalid / failed / interrupted / damaged / pending cells, from the store; every file's size "
        "and sha256 checked against its manifest",
        (
            ("paths.store=/data/results", "every cell that store holds, by label"),
            ("experiment=smoke", "the grid to look for (with the overrides its run had), pending cells too"),
            ("--quick experiment=smoke", "check file sizes, not checksums"),
            ("format=json", "the counts and every cell's status as JSON on stdout"),
            ("format=csv", "every cell's label, key, status, attempts and last error (format=md too)"),
        ),
        "Running a grid",
        ("--quick",),
        sections=("grid", "run", "paths"),
    ),
    "plan": Command(
        "cells, engine launches, GPU bundles and GPU-hours of a grid, before running it",
        (
            ("experiment=final", "the study's grid"),
            ("experiment=final format=json", "as JSON on stdout"),
        ),
        "Running a grid",
        sections=("grid", "load", "plan", "cluster", "engine"),
    ),
    "simulate": Command(
        "the grid's makespan on a cluster description, against its lower bound",
        (("experiment=final cluster=h200x8_4nodes", "on 4 nodes of 8 H200s"),),
        "Running a grid",
        sections=("grid", "plan", "cluster"),
    ),
    "summary": Command(
        "the table of a store's cells (latest ok attempt each, anchor runs left out)",
        (
            ("", "the table of ./results"),
            ("paths.store=/data/results", "another store"),
            ("format=csv > cells.csv", "one row per cell, with a header, on stdout"),
            ("format=json", '{"cells": [...], "left_out": [...]} on stdout'),
            ("format=md", "a Markdown table (for an issue or a PR), the cells left out below it"),
        ),
        "The store",
        sections=("paths",),
    ),
    "corpus": Command(
        "the corpora with their sizes and prompt-length percentiles",
        (
            ("format=json", "as JSON on stdout (format=csv, format=md: the table's rows)"),
            ("grid.corpora=[mine] +corpus.mine.path=/data/t.jsonl", "your own"),
        ),
        "Corpora and your own traces",
        sections=("grid", "load", "paths"),
    ),
    "confirm": Command(
        "measure each model's final configuration and van again, held out (a fresh session, new prompts), "
        "and record the figure Table 1 and the report show beside the selection's",
        (("experiment=final", "after the study's grid (experiment=final also runs it at its end)"),),
        "Decisions and their error rates",
        sections=("grid", "load", "run", "gates", "paths"),
    ),
    "compare": Command(
        "two stores, or two sessions of one, side by side: each lever's tok/s and B / A with its interval "
        "and verdict (analysis.decision's rule and drift band)",
        (
            ("stores=[/data/before,/data/after]", "two stores (every session of each)"),
            ("sessions=[S1,S2] paths.store=/data/results", "two sessions of one store"),
            ("stores=[a,b] format=csv", "one row per lever configuration, on stdout (format=json, md too)"),
        ),
        "Analysis, report, notebooks",
        sections=("paths",),
    ),
    "report": Command(
        "write <store>/reports/<experiment>.html: Table 1, best K, drift, figures (one page)",
        (
            ("experiment=smoke", "the report of the smoke grid (with the overrides its run had)"),
            ("paths.store=/data/results", "every cell that store holds: <store>/reports/store.html"),
        ),
        "Analysis, report, notebooks",
        sections=("grid", "paths"),
    ),
}

COMMON = (
    "every command takes the config's overrides: key=value (an existing key), +key=value (a new one);\n"
    "your own config folders: hydra.searchpath=[file:///my/conf] or LEVER_GRID_CONF=/my/conf[:/other];\n"
    "your own corpus in one line: grid.corpora=[mine] +corpus.mine.path=/data/trace.jsonl"
)


def config_keys() -> str:
    """The config's top-level keys, from its schema (vocab/schema.py:Config), wrapped."""
    from vocab.schema import Config

    keys = ", ".join(f.name for f in fields(Config))
    return "\n".join(textwrap.wrap(f"config keys (vocab/schema.py): {keys}", 100))


def section_keys(section: str) -> list[str]:
    """A config section's keys, each with its meaning (the first sentence of its comment in
    vocab/schema.py, vocab/cli_reference.py), its subsections' after them; wrapped."""
    from vocab.cli_reference import help_lines

    return help_lines([section])


def usage() -> str:
    """`python -m grid --help`: every command, one line each."""
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PY} {{{','.join(COMMANDS)}}} [key=value ...]", "", "commands:"]
    indent = " " * (width + 4)
    for name, c in COMMANDS.items():
        lines += textwrap.wrap(
            c.summary, 100, initial_indent=f"  {name:<{width}}  ", subsequent_indent=indent
        )
    lines += ["", COMMON, config_keys()]
    lines += [f"`{PY} <command> --help` for a command's usage; docs/README.md indexes the pages on each one."]
    return "\n".join(lines)


def command_usage(name: str) -> str:
    """`python -m grid <command> --help`: what it does, its common arguments, its docs/ section."""
    command = COMMANDS[name]
    flags = "".join(f" [{flag}]" for flag in command.flags)
    lines = [f"usage: {PY} {name}{flags} [key=value ...]", "", *textwrap.wrap(command.summary, 100)]
    lines += ["", "examples:"]
    for args, what in command.examples:
        lines += [f"  {PY} {name} {args}".rstrip(), f"      {what}"]
    lines += ["", COMMON, config_keys(), "", "keys it reads (section.key=value; all of them: docs/cli.md):"]
    lines += [line for section in command.sections for line in section_keys(section)]
    lines += [f"{DOC_PAGES[command.readme]}, section '{command.readme}'."]
    return "\n".join(lines)


def summary(overrides: list[str]) -> int:
    """`python -m grid summary [format=table|json|csv]`: the store's cells."""
    from analysis.summary import export, latest_cells, render
    from grid.config.compose import check_run_mode, compose_config, pop_format
    from vocab.paths import existing_store

    fmt, overrides = pop_format(overrides, ("table", "json", "csv", "md"))
    cfg = compose_config(overrides)
    check_run_mode(cfg)
    paths = cfg.paths
    frame = latest_cells(existing_store(paths.store, paths.get("store_options")))
    if fmt == "table":
        render(frame)
    else:
        export(frame, fmt, sys.stdout)
    return 0


# Exit codes, one table (docs/own-traffic.md "Exit codes"): 0 the command did what it says; 1 a run that
# stopped (its store failed mid-run) or left cells failed, interrupted or pending; 2 nothing was launched:
# a bad name, override, value or config file, or a store or file the command cannot use (unreachable,
# unwritable, full); 130 / 143 Ctrl-C / SIGTERM (128 + the signal); 141 the reader of stdout went away.
EXIT_BAD_INPUT = 2


def main(argv: list[str]) -> int:
    try:
        return dispatch(argv)
    except BrokenPipeError:
        # `summary format=csv | head`, `--help | head`: the reader has gone; no traceback, none at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in HELP_FLAGS:
        print(usage())
        return 0 if argv else 2
    command, overrides = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"error: unknown command '{command}'\n{usage()}", file=sys.stderr)
        return 2
    if any(arg in HELP_FLAGS for arg in overrides):
        print(command_usage(command))
        return 0
    # A --flag is not an override: Hydra would answer with a lexer error.
    if unknown := [a for a in overrides if a.startswith("-") and a not in COMMANDS[command].flags]:
        known = f" (its options: {', '.join(COMMANDS[command].flags)})" if COMMANDS[command].flags else ""
        print(
            f"error: unknown option '{unknown[0]}' for {command}{known}; overrides are key=value; "
            f"`{PY} {command} --help` for its usage",
            file=sys.stderr,
        )
        return 2
    try:
        if command == "run":
            from grid.orchestrate.drive import drive

            return drive(overrides)
        if command == "compare":
            from grid.cli.compare import compare_command

            return compare_command(overrides)
        if command == "status":
            from grid.cli.status import status

            quick = "--quick" in overrides
            return status([o for o in overrides if o != "--quick"], checksums=not quick)
        if command == "simulate":
            from grid.cli.plan_report import simulate_plan

            simulate_plan(overrides)
            return 0
        if command == "plan":
            from grid.cli.plan_report import plan

            return plan(overrides)
        if command == "corpus":
            from grid.cli.corpus_report import corpus

            return corpus(overrides)
        if command == "confirm":
            from grid.orchestrate.confirm import confirm

            return confirm(overrides)
        if command == "report":
            from grid.cli.report import report

            return report(overrides)
        return summary(overrides)
    except GridError as exc:
        from store.fs import redact  # pyarrow: only on this path, not for every command's start

        # The last stop before the terminal: no message shows a store URL's credentials.
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        raise  # main's: the reader has gone
    except OSError as exc:
        # A store error (store/errors.py StoreError) is a GridError, caught above; a ValueError is a
        # bug, not something a user caused: its traceback is what to report. A store that does not
        # answer (store/fs.py StoreUnreachable names it and its endpoint), a disk that is full, a file
        # that cannot be written: one line, not a traceback.
        from store.fs import os_error_line

        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        # A run's launch handles its own signals; Ray is imported only at a launch
        # (grid/orchestrate/schedule.py).
        if "grid.orchestrate.schedule" not in sys.modules:  # nothing to stop or record
            print("interrupted before anything was launched", file=sys.stderr)
        else:
            print("interrupted: exiting now (what the run measured is in the store)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`python -m grid compare`: two stores, or two sessions of one, side by side with the decision rule.

    python -m grid compare stores=[/data/before,/data/after]
    python -m grid compare sessions=[20261201-0930-ab12,20261203-1012-cd34] paths.store=/data/results

Side B is judged against side A (B / A), per lever configuration measured VALID on both.
"""

from __future__ import annotations

import json
import sys

from rich.console import Console

from analysis.drift import session_drift
from analysis.load import anchor_runs, measured_cells
from analysis.medians import lever_medians
from analysis.repeats import valid_only
from analysis.side_by_side import Side, side_by_side
from grid.config.compose import check_run_mode, compose_config, pop_format
from store.read import connect
from vocab.console import Col, make_console, markdown_table, print_table
from vocab.errors import ConfigError
from vocab.paths import existing_store

COLUMNS = [
    Col("model", "left"),
    Col("corpus", "left"),
    Col("lever", "left"),
    Col("K"),
    Col("n A"),
    Col("A tok/s"),
    Col("n B"),
    Col("B tok/s"),
    Col("B / A"),
    Col("verdict", "left", no_wrap=False, want=30),
]


def pop_pair(overrides: list[str], key: str) -> tuple[list[str] | None, list[str]]:
    """`key=[x,y]` taken out of the overrides (Hydra knows no such key): its two values, or None."""
    found, rest = None, []
    for item in overrides:
        if item.startswith(f"{key}="):
            values = [
                v.strip().strip("'\"") for v in item.split("=", 1)[1].strip("[]").split(",") if v.strip()
            ]
            if len(values) != 2:
                raise ConfigError(
                    f"{key} takes two values, got {len(values)} in '{item}'; e.g. {key}=[before,after]"
                )
            found = values
        else:
            rest.append(item)
    return found, rest


def load_side(root: object, session: str | None, name: str) -> Side:
    """One side's medians (VALID cells, of `session` when given), its sessions' drift, and its cells
    (INVALID ones too: a row says which were left out of its median)."""
    con = connect(root)
    measured = measured_cells(con)
    if session is not None:
        if session not in set(measured["session_id"]):
            known = ", ".join(sorted(set(measured["session_id"]))[-5:]) or "none"
            raise ConfigError(
                f"session '{session}' has no measured cell in {root} (its latest sessions: {known})"
            )
        measured = measured[measured["session_id"] == session]
    medians, _ = lever_medians(measured)
    sessions = set(measured["session_id"])
    drift, _ = session_drift(anchor_runs(con, sessions))
    valid, _ = valid_only(measured)
    return Side(name, medians, drift, valid, measured)


def k_text(k: object) -> str:
    """A K as shown: '-' for a lever without one (NaN)."""
    return "-" if k is None or k != k else str(int(k))  # type: ignore[call-overload]


def compare_command(overrides: list[str], console: Console | None = None) -> int:
    fmt, overrides = pop_format(overrides, ("table", "json", "csv", "md"))
    stores, overrides = pop_pair(overrides, "stores")
    sessions, overrides = pop_pair(overrides, "sessions")
    if (stores is None) == (sessions is None):
        raise ConfigError(
            "compare takes stores=[A,B] (two stores) or sessions=[A,B] (two sessions of paths.store), "
            "one of the two"
        )
    # paths.store_options configure the `stores` too, and each is checked as paths.store is, by its name.
    cfg = compose_config(overrides, stores=stores or ())
    check_run_mode(cfg)
    options = cfg.paths.get("store_options")
    if stores is not None:
        sides = [load_side(existing_store(s, options, f"stores[{i}]"), None, s) for i, s in enumerate(stores)]
    else:
        root = existing_store(cfg.paths.store, options)
        sides = [load_side(root, s, s) for s in sessions or []]
    table, alone = side_by_side(*sides)
    if fmt == "csv":
        table.to_csv(sys.stdout, index=False)
    elif fmt == "md":
        sys.stdout.write(f"A = {sides[0].name}, B = {sides[1].name}\n\n")
        sys.stdout.write(markdown_table(list(table.columns), table.itertuples(index=False)))
        sys.stdout.write("".join(f"\n- {line}" for line in alone) + ("\n" if alone else ""))
    elif fmt == "json":
        out = {
            "a": sides[0].name,
            "b": sides[1].name,
            "rows": table.to_dict("records"),
            "only_one_side": alone,
        }
        json.dump(out, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        console = console or make_console()
        console.print(f"A = {sides[0].name}\nB = {sides[1].name}", markup=False, highlight=False)
        rows = [
            [str(r["model"]), str(r["corpus"]), str(r["lever"]), k_text(r["k"]),
             str(r["n_a"]), f"{r['tok_per_s_a']:,.1f}", str(r["n_b"]), f"{r['tok_per_s_b']:,.1f}",
             f"{r['ratio']:.3f}", "; ".join(filter(None, [str(r["verdict"]), r["invalid_left_out"],
                                                           r["also_differs"]]))]
            for r in table.to_dict("records")
        ]  # fmt: skip
        if rows:
            print_table(
                console,
                "B against A (median tok/s of VALID repeats)",
                COLUMNS,
                rows,
                ["n A", "n B"],
                "format=csv",
            )
        else:
            console.print("no lever configuration is measured VALID on both sides")
        for line in alone:
            console.print(line, markup=False, highlight=False)
    return 0

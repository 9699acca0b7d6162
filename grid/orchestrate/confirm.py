"""`python -m grid confirm experiment=...`: each model's final configuration measured again, held out.

The study selects each model's final lever on its own cells (analysis/final.py),
so the figure it selected on reads high. This command measures, for every model
whose final configuration is not van, that configuration and van again: a grid
run of its own (fresh session, fresh engines, anchors, equivalence gate) with
load.seed + grid.confirm.seed_step (prompt orders the selection never drew, new
cell keys), on the corpora the selection scored it on, one run per K where the
K differs by corpus. analysis/confirmation.py judges those cells alone; Table 1
and the report show that figure beside the selection's.

What it measures is written first to <store>/confirmations/<experiment>.json
(the plan, with its cell keys), so an interrupted confirmation resumes by
running the same command, and the report knows which cells are its.
`grid.confirm.enabled=true` (experiment=final sets it) runs this at the end of
every `grid run` that leaves nothing failed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from analysis.confirmation import planned_label
from analysis.gate import parse_k_by_corpus
from grid.config.compose import check_run_mode, compose_config
from grid.config.expand import expand, to_config
from store.atomic import write_atomic
from store.fs import StoreRoot
from store.layout import StoreLayout
from vocab.cells import REFERENCE_LEVER
from vocab.errors import GridError
from vocab.paths import existing_store

# Overrides of the run that must not carry into a confirmation: it is a session of its own.
# Nor do sequential looks: a confirmation is measured at grid.confirm.repeats, once.
NOT_CARRIED = ("session_id=", "grid.confirm.", "grid.sequential.")


@dataclass(frozen=True)
class ConfirmPlan:
    """One model's confirmation: its final configuration, the runs that measure it, their cells."""

    model: str
    planned: str  # analysis.confirmation.planned_label: what is confirmed
    selection: str  # the selection's figure, in words (Table 1's)
    runs: tuple[tuple[str, ...], ...]  # the overrides of each grid run (one per K)
    cell_keys: tuple[str, ...]


def carried(overrides: Sequence[str]) -> list[str]:
    """The run's overrides a confirmation keeps (its grid, load and paths; not its session)."""
    return [o for o in overrides if not o.lstrip("+~").startswith(NOT_CARRIED)]


def run_overrides(
    base: Sequence[str],
    model: str,
    lever: str,
    k: int,
    corpora: Sequence[str],
    seed: int,
    repeats: int | None,
) -> tuple[str, ...]:
    """One confirmation run: `model` x `corpora` x {van, lever at K}, on the confirmation's seed."""
    levers = [REFERENCE_LEVER] if lever == REFERENCE_LEVER else [REFERENCE_LEVER, lever]
    overrides = [
        *carried(base),
        f"grid.models=[{model}]",
        f"grid.corpora=[{','.join(corpora)}]",
        f"grid.levers=[{','.join(levers)}]",
        f"load.seed={seed}",
        "grid.confirm.enabled=false",
        "grid.sequential.enabled=false",
    ]
    if k:  # ++: replaces a K list the experiment already sets, adds one where it sets none
        overrides.append(f"++grid.ks.{lever}=[{k}]")
    if repeats is not None:
        overrides.append(f"grid.repeats={repeats}")
    return tuple(overrides)


def plan_confirmations(final: Any, base: Sequence[str]) -> list[ConfirmPlan]:
    """The confirmation of every model of `final` (analysis.final.final_levers) whose lever is not van."""
    cfg = to_config(compose_config(list(base)))
    seed = cfg.load.seed + cfg.grid.confirm.seed_step
    plans = []
    for row in final.to_dict("records"):
        lever = row.get("final_lever")
        if not isinstance(lever, str) or lever == REFERENCE_LEVER:
            continue
        by_k: dict[int, list[str]] = {}
        for corpus, k in parse_k_by_corpus(row["final_k_by_corpus"]):
            by_k.setdefault(k, []).append(corpus)
        runs = tuple(
            run_overrides(base, row["model"], lever, k, corpora, seed, cfg.grid.confirm.repeats)
            for k, corpora in sorted(by_k.items())
        )
        keys = sorted({c.key for argv in runs for c in expand(to_config(compose_config(list(argv))))})
        selection = f"{row['speedup_vs_van']:.3f}x [{row['ci_lo']:.3f}, {row['ci_hi']:.3f}] ({row['label']})"
        plans.append(ConfirmPlan(row["model"], planned_label(row), selection, runs, tuple(keys)))
    return plans


def write_record(root: StoreRoot, experiment: str, plans: Sequence[ConfirmPlan]) -> StoreRoot:
    record = {
        "experiment": experiment,
        "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "models": [asdict(p) for p in plans],
    }
    text = json.dumps(record, indent=1)
    return write_atomic(StoreLayout(root).confirmation_file(experiment), lambda tmp: tmp.write_text(text))


def read_record(root: StoreRoot, experiment: str) -> Mapping[str, Any] | None:
    """The confirmation record of `experiment`, None when none was planned; an unreadable one is an error."""
    path = StoreLayout(root).confirmation_file(experiment)
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        [(m["model"], m["planned"], m["cell_keys"]) for m in record["models"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise GridError(
            f"confirmation record {path} is damaged ({exc}); delete it and rerun `python -m grid confirm`"
        ) from exc
    return record


def confirm(overrides: list[str], run: Callable[[list[str]], int] | None = None) -> int:
    """Plan, record and run each model's confirmation; the exit code of the first run that failed."""
    cfg = compose_config(overrides)
    check_run_mode(cfg)
    config = to_config(cfg)
    from analysis.study import load_study

    # It reads the selection from the store: a mistyped path is an error, not 'nothing to confirm'.
    root = existing_store(config.paths.store, config.paths.store_options)
    from grid.orchestrate.sequential import selection_scope

    keys, confidence = selection_scope(overrides)
    study = load_study(root, cell_keys=keys, confidence=confidence)
    plans = plan_confirmations(study.final, overrides)
    if not plans:
        print(f"confirm: no model of '{config.name}' has a final lever other than van: nothing to confirm")
        return 0
    path = write_record(root, config.name, plans)
    print(f"confirm: {len(plans)} model(s) to confirm, plan in {path}")
    from grid.orchestrate.run import one_ray_session
    from grid.orchestrate.run import run as grid_run

    with one_ray_session():  # one Ray cluster for all the confirmation's runs
        for plan in plans:
            print(f"confirm {plan.model}: {plan.planned}; selection {plan.selection}")
            for argv in plan.runs:
                code = (run or grid_run)(list(argv))
                if code != 0:
                    return code
    print(
        f"confirm: done; `python -m grid report {' '.join(carried(overrides))}` shows the confirmed figures"
    )
    return 0

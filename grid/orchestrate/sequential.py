"""`grid.sequential.enabled=true`: repeats only where needed, look by look (analysis/sequential.py).

`grid run` then measures the whole grid at the first look's repeats, judges
every comparison of a lever (at each K) with van on the same model and corpus
at Pocock's corrected confidence, and runs the next look only for what is still
undecided: one `grid run` per model with van, its undecided levers and K and
their corpora, at the next look's cumulative repeats (the cells already
measured are resumed, not rerun). It stops when nothing is undecided or at the
cap (the last look). A model's run measures every combination of its undecided
levers, K and corpora, so a few decided ones may get repeats they did not need;
comparisons between levers (best K, the walk) are judged on whatever repeats
their two sides have, at the same corrected confidence (grid report).

Each look after the first is a session of its own, with its own anchors: the
drift band of a comparison then spans its sessions (analysis.drift), which under
a large between-session offset costs power (`python -m analysis.sequential_power`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import Console

from analysis.decision import CONFIDENCE
from analysis.drift import drift_band, session_drift
from analysis.load import anchor_runs, measured_cells
from analysis.medians import lever_medians, sessions_of
from analysis.sequential import check_looks, look, pocock_confidence
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from store.read import connect
from vocab.cells import REFERENCE_LEVER
from vocab.paths import store_path
from vocab.schema import Config

# A look's own runs set these; the user's values for them do not carry.
OWNED = ("grid.repeats=", "grid.sequential.enabled=", "grid.confirm.enabled=", "session_id=")


def base_overrides(overrides: Sequence[str]) -> list[str]:
    return [o for o in overrides if not o.lstrip("+~").startswith(OWNED)]


def at_cap(overrides: Sequence[str]) -> Config:
    """The grid as the cap's repeats expand it: every cell a look may measure."""
    config = to_config(compose_config(list(overrides)))
    looks = check_looks(config.grid.sequential.looks)
    return to_config(compose_config([*base_overrides(overrides), f"grid.repeats={looks[-1]}"]))


def selection_scope(overrides: Sequence[str]) -> tuple[set[str], float]:
    """The cells a study's selection is made on and the confidence it judges at.

    With sequential looks: every repeat up to the cap, at Pocock's corrected confidence; otherwise
    `grid.repeats`' cells at the usual confidence. `grid report` and `grid confirm` both select here,
    so the confirmation measures the configuration the report shows.
    """
    config = to_config(compose_config(list(overrides)))
    if not config.grid.sequential.enabled:
        return {cell.key for cell in expand(config)}, CONFIDENCE
    confidence = pocock_confidence(tuple(config.grid.sequential.looks))
    return {cell.key for cell in expand(at_cap(overrides))}, confidence


@dataclass
class Pending:
    """One model's undecided comparisons: the levers with their K, the corpora, the next look."""

    levers: dict[str, set[int]] = field(default_factory=dict)
    corpora: set[str] = field(default_factory=set)
    repeats: int = 0
    why: list[str] = field(default_factory=list)


def pending(overrides: Sequence[str]) -> dict[str, Pending]:
    """Per model, what the next look must measure (empty: every comparison is decided)."""
    config = at_cap(overrides)
    seq = config.grid.sequential
    looks = check_looks(seq.looks)
    con = connect(store_path(config.paths.store, config.paths.store_options))
    measured = measured_cells(con, {c.key for c in expand(config)})
    medians, _ = lever_medians(measured)
    drift, _ = session_drift(anchor_runs(con, set(measured["session_id"])))
    out: dict[str, Pending] = {}
    if medians.empty:
        return out
    van = {(r.model, r.corpus): r for r in medians[medians["lever"] == REFERENCE_LEVER].itertuples()}
    for row in medians[medians["lever"] != REFERENCE_LEVER].itertuples():
        reference = van.get((row.model, row.corpus))
        if reference is None:
            continue
        band = drift_band(drift, sessions_of(medians.loc[[row.Index, reference.Index]]))
        step = look(row.repeats, reference.repeats, band, looks, seq.min_gain)
        if step.decided:
            continue
        mine = out.setdefault(row.model, Pending())
        mine.levers.setdefault(row.lever, set()).update({int(row.k)} if row.k else set())
        mine.corpora.add(row.corpus)
        mine.repeats = max(mine.repeats, step.next_repeats or 0)
        k = f" K={int(row.k)}" if row.k else ""
        mine.why.append(f"{row.model}/{row.lever}{k}/{row.corpus}: {step.why}")
    return out


def look_overrides(overrides: Sequence[str], model: str, todo: Pending) -> list[str]:
    argv = [
        *base_overrides(overrides),
        f"grid.models=[{model}]",
        f"grid.corpora=[{','.join(sorted(todo.corpora))}]",
        f"grid.levers=[{','.join([REFERENCE_LEVER, *sorted(todo.levers)])}]",
        f"grid.repeats={todo.repeats}",
        "grid.sequential.enabled=false",
        "grid.confirm.enabled=false",
    ]
    argv += [
        f"++grid.ks.{lever}=[{','.join(map(str, sorted(ks)))}]"
        for lever, ks in sorted(todo.levers.items())
        if ks
    ]
    return argv


def run_sequential(overrides: list[str], console: Console, run: Callable[[list[str]], int]) -> int:
    """The looks (module doc); the exit code of the first run that did not end clean, else 0."""
    config = to_config(compose_config(overrides))
    looks = check_looks(config.grid.sequential.looks)
    console.rule(f"sequential repeats: look 1 of {len(looks)} ({looks[0]} repeats, every comparison)")
    first = [*base_overrides(overrides), f"grid.repeats={looks[0]}", "grid.sequential.enabled=false",
             "grid.confirm.enabled=false"]  # fmt: skip
    code = run(first)
    for number in range(2, len(looks) + 1):
        if code != 0:
            return code
        todo = pending(overrides)
        if not todo:
            console.print("sequential repeats: every comparison is decided")
            break
        for model, mine in sorted(todo.items()):
            console.rule(f"sequential repeats: look {number}, {model} to {mine.repeats} repeats")
            for line in mine.why:
                console.print(f"  {line}")
            code = run(look_overrides(overrides, model, mine))
            if code != 0:
                return code
    return code

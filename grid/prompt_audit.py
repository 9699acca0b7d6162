"""Before launch: would any measured prompt be one its engine has already served?

Replays each engine launch's cells in order (warm-up, measured, probe prompts,
exactly as workers/runner.py sends them) through workers/served.py, without
an engine. `run` stops here when anything repeats and load.allow_repeats is
off; `plan` shows the per-corpus figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grid.errors import ConfigError
from grid.plan import EngineGroup
from workers.prompts import Corpus, TooFewPrompts, cell_schedule, distinct, probe_prompts, read_corpus
from workers.served import Reuse, ServedPrompts


@dataclass(frozen=True)
class CellPrompts:
    """What one cell would send, and how many of its measured prompts its engine saw before."""

    label: str
    corpus: str
    distinct_available: int
    warmup: int
    measured: int
    reuse: Reuse
    # Set when the corpus is too small for this cell without repeats.
    too_few: str | None = None


def audit_groups(groups: list[EngineGroup], data_dir: Path, probe_count: int) -> list[CellPrompts]:
    """One CellPrompts per cell, replaying each launch's cells in their run order."""
    corpora: dict[tuple[str, str, bool], Corpus] = {}
    out = []
    for group in groups:
        served = ServedPrompts()
        for cell in group.cells:
            spec = cell.corpus
            source = (spec.path, spec.format, spec.skip_bad_rows)
            if source not in corpora:
                corpora[source] = read_corpus(data_dir / spec.path, spec.format, spec.skip_bad_rows)
            corpus = corpora[source]
            too_few = None
            try:
                cell_schedule(cell, corpus, allow_repeats=False)
            except TooFewPrompts as exc:
                too_few = str(exc)
            plan = cell_schedule(cell, corpus, allow_repeats=True)
            reuse = served.measured_reuse(plan.warmup, plan.measured, spec.name, cell.repeat)
            for prompts in (plan.warmup, plan.measured, probe_prompts(corpus.prompts, probe_count)):
                served.add(prompts, spec.name, cell.repeat)
            out.append(
                CellPrompts(
                    cell.label,
                    spec.name,
                    len(distinct(corpus.prompts)),
                    len(plan.warmup),
                    len(plan.measured),
                    reuse,
                    too_few,
                )
            )
    return out


def check_no_repeats(audit: list[CellPrompts]) -> None:
    """Stop before launch when a measured prompt would not be new to its engine; one line per cause."""
    problems: dict[str, str] = {}
    for row in audit:
        if row.too_few:
            problems.setdefault(f"size:{row.corpus}", row.too_few)
        elif row.reuse.total:
            reuse = row.reuse
            problems.setdefault(
                f"reuse:{row.label}",
                f"{row.label}: {reuse.total} of {row.measured} measured prompts were already sent to its "
                f"engine ({reuse.in_earlier_corpus} by an earlier corpus, {reuse.in_earlier_repeat} by an "
                "earlier repeat); give the corpus its own engine (grid.engine_reuse=per_corpus) or set "
                "load.allow_repeats=true to measure anyway",
            )
    if problems:
        raise ConfigError("measured prompts would repeat:\n  " + "\n  ".join(problems.values()))


def corpus_rows(audit: list[CellPrompts]) -> list[dict[str, object]]:
    """Per corpus: distinct prompts available, the most a cell sends, and repeated measured prompts in all."""
    by_corpus: dict[str, list[CellPrompts]] = {}
    for cell in audit:
        by_corpus.setdefault(cell.corpus, []).append(cell)
    return [
        {
            "corpus": corpus,
            "distinct_prompts": cells[0].distinct_available,
            "warmup": max(c.warmup for c in cells),
            "measured": max(c.measured for c in cells),
            "prompts_reused": sum(c.reuse.total for c in cells),
        }
        for corpus, cells in by_corpus.items()
    ]

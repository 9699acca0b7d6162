"""Before launch: would any measured prompt be one its engine has already served?

Replays each engine launch's cells in order (warm-up, measured, probe prompts,
exactly as workers/cell.py sends them) through workers/engine/served.py, without
an engine. `run` stops here when anything repeats and load.allow_repeats is
off; `plan` shows the per-corpus figures.

Each corpus is read once (read_corpora); one that cannot be read is named
with its reason and its cells are left out of the replay, so every corpus's
problem shows at once. The replay also records which prompts each model's
cells send (`sent`), for the context-length check (grid/checks/prompt_fit.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from store.fs import StoreRoot
from vocab.errors import ConfigError
from vocab.groups import EngineGroup
from vocab.paths import project_path
from vocab.schema import CorpusSpec
from workers.engine.served import Reuse, ServedPrompts
from workers.load.prompts import (
    Corpus,
    Schedule,
    TooFewPrompts,
    cell_schedule,
    corpus_file,
    probe_prompts,
    read_corpus,
)
from workers.load.traces import named

if TYPE_CHECKING:
    from vocab.cells import Cell


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


# A corpus source: (path, format, skip_bad_rows); corpora naming the same one are read once.
CorpusKey = tuple[str, str, bool]
# Which prompts (content hashes) a model's cells send from a corpus source with a given room:
# (model, source, engine.max_model_len, load.max_tokens) -> hashes.
SentKey = tuple[str, CorpusKey, int, int]


@dataclass(frozen=True)
class CorpusRead:
    """One corpus source as read: its prompts and skipped rows, or why it could not be read."""

    spec: CorpusSpec
    path: Path
    corpus: Corpus | None
    error: str | None = None


def corpus_key(spec: CorpusSpec) -> CorpusKey:
    return (spec.path, spec.format, spec.skip_bad_rows)


def read_corpora(
    groups: list[EngineGroup], data_dir: StoreRoot, cache_dir: Path | None = None
) -> dict[CorpusKey, CorpusRead]:
    """Every corpus source the groups' cells use, read once; an unreadable one carries its reason.

    From a URL data_dir each is fetched into `cache_dir` (default .cache) first (workers/load/prompts.py).
    """
    reads: dict[CorpusKey, CorpusRead] = {}
    for group in groups:
        for cell in group.cells:
            spec = cell.corpus
            if (key := corpus_key(spec)) in reads:
                continue
            path = data_dir / spec.path
            try:
                path = corpus_file(data_dir, spec.path, cache_dir or project_path(".cache"))
                reads[key] = CorpusRead(spec, path, read_corpus(path, spec.format, spec.skip_bad_rows))
            except ConfigError as exc:
                reads[key] = CorpusRead(
                    spec, path, None, f"corpus '{spec.name}': {named(str(exc), spec.name)}"
                )
    return reads


class SchedulePlans:
    """Each cell's schedule and size verdict, worked out once per corpus, load and repeat seed.

    Every model and lever of one repeat sends the same prompts (workers/load/prompts.py:
    prompt_seed), so the study's thousands of cells share a few dozen schedules; each one
    shuffles the whole corpus, which made `grid plan experiment=final` spend most of its
    time shuffling the same orders again. Keyed by the corpus object: the audit's reads
    keep every corpus alive for as long as this lives.
    """

    def __init__(self) -> None:
        self._plans: dict[tuple, tuple[str | None, Schedule]] = {}

    def of(self, cell: Cell, corpus: Corpus) -> tuple[str | None, Schedule]:
        """Why the corpus is too small for the cell without repeats (None if it is not), and the
        cell's schedule with repeats allowed."""
        load = cell.load
        key = (id(corpus), cell.corpus.name, load.warmup_requests, load.num_prompts, load.seed, cell.repeat)
        if key not in self._plans:
            too_few = None
            try:
                cell_schedule(cell, corpus, allow_repeats=False)
            except TooFewPrompts as exc:
                too_few = str(exc)
            self._plans[key] = (too_few, cell_schedule(cell, corpus, allow_repeats=True))
        return self._plans[key]


def audit_groups(
    groups: list[EngineGroup],
    data_dir: Path,
    probe_count: int,
    corpora: dict[CorpusKey, CorpusRead] | None = None,
    sent: dict[SentKey, set[str]] | None = None,
) -> list[CellPrompts]:
    """One CellPrompts per cell, replaying each launch's cells in their run order.

    Without `corpora` the corpora are read here and one that cannot be read
    raises (every such corpus named); with them, cells of an unreadable corpus
    are left out. `sent`, when given, collects what each model's cells send.
    """
    if corpora is None:
        corpora = read_corpora(groups, data_dir)
        if errors := [r.error for r in corpora.values() if r.error]:
            raise ConfigError("\n  ".join(errors))
    out = []
    plans = SchedulePlans()
    for group in groups:
        served = ServedPrompts()
        for cell in group.cells:
            if group.resets:  # reset to fresh before the cell (workers/launch.py: ready_for_cell)
                served = ServedPrompts()
            spec = cell.corpus
            corpus = corpora[corpus_key(spec)].corpus
            if corpus is None:
                continue
            too_few, plan = plans.of(cell, corpus)
            reuse = served.measured_reuse(plan.warmup, plan.measured, spec.name, cell.repeat)
            for prompts in (plan.warmup, plan.measured, probe_prompts(corpus.prompts, probe_count)):
                served.add(prompts, spec.name, cell.repeat)
            if sent is not None:
                engine = cell.engine_spec
                key = (engine.model.name, corpus_key(spec), engine.engine.max_model_len, cell.load.max_tokens)
                sent.setdefault(key, set()).update(p.content_hash for p in (*plan.warmup, *plan.measured))
            out.append(
                CellPrompts(
                    cell.label,
                    spec.name,
                    corpus.distinct_count,
                    len(plan.warmup),
                    len(plan.measured),
                    reuse,
                    too_few,
                )
            )
    return out


def repeat_problems(audit: list[CellPrompts]) -> list[str]:
    """One line per cause of a measured prompt that would not be new to its engine."""
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
    return list(problems.values())


def corpus_rows(
    audit: list[CellPrompts], corpora: dict[CorpusKey, CorpusRead] | None = None
) -> list[dict[str, object]]:
    """Per corpus: distinct prompts available, the most a cell sends, and repeated measured prompts in all.

    With `corpora`, also the rows skipped as bad (and the first reasons) and
    every corpus that could not be read, with its error.
    """
    by_corpus: dict[str, list[CellPrompts]] = {}
    for cell in audit:
        by_corpus.setdefault(cell.corpus, []).append(cell)
    reads = {read.spec.name: read for read in (corpora or {}).values()}
    rows: list[dict[str, object]] = []
    for corpus, cells in by_corpus.items():
        row: dict[str, object] = {
            "corpus": corpus,
            "distinct_prompts": cells[0].distinct_available,
            "warmup": max(c.warmup for c in cells),
            "measured": max(c.measured for c in cells),
            "prompts_reused": sum(c.reuse.total for c in cells),
        }
        if (read := reads.get(corpus)) is not None and read.corpus is not None:
            row |= {"skipped_rows": read.corpus.skipped_rows, "skip_reasons": list(read.corpus.skip_reasons)}
        rows.append(row)
    for name, read in reads.items():
        if read.error:
            rows.append({"corpus": name, "error": read.error})
    return rows

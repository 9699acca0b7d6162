"""Prompt corpora on disk and the seeded order in which a run sends them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from grid.errors import ConfigError
from workers.traces import Skipped, read_rows


@dataclass(frozen=True)
class Prompt:
    """One corpus entry: a raw prompt (completions) or chat messages."""

    prompt_id: str
    prompt: str | None = None
    messages: tuple[dict[str, str], ...] | None = None


@dataclass(frozen=True)
class Corpus:
    """A loaded corpus and the bad rows left out of it (only under skip_bad_rows)."""

    prompts: list[Prompt]
    skipped_rows: int = 0
    # The first few skipped rows' "file:row: reason", for the log and the results.
    skip_reasons: tuple[str, ...] = ()


def read_corpus(path: Path, format: str = "auto", skip_bad_rows: bool = False) -> Corpus:
    """Read a built corpus or a bring-your-own trace (JSONL, Parquet, save_to_disk folder).

    Formats and row shapes are in workers/traces.py. A bad row raises an error
    naming file, row and reason; with `skip_bad_rows` it is counted instead.
    """
    if not path.exists():
        raise ConfigError(
            f"corpus file {path} is missing; build the shipped corpora with `make assets`, or point the "
            "corpus's `path` at your own trace (JSONL, Parquet or a save_to_disk folder; workers/traces.py)"
        )
    skipped = Skipped() if skip_bad_rows else None
    prompts = [Prompt(r.prompt_id, r.prompt, r.messages) for r in read_rows(path, format, skipped)]
    count = skipped.count if skipped else 0
    if not prompts:
        raise ConfigError(
            f"corpus file {path} has no prompts" + (f" ({count} bad rows skipped)" if count else "")
        )
    return Corpus(prompts, count, tuple(skipped.reasons) if skipped else ())


def load_corpus(path: Path, format: str = "auto", skip_bad_rows: bool = False) -> list[Prompt]:
    """The prompts of `read_corpus`, for callers that need no skipped-row count."""
    return read_corpus(path, format, skip_bad_rows).prompts


@dataclass(frozen=True)
class Schedule:
    """Which prompts a run sends: warmup first, then the measured ones."""

    warmup: list[Prompt]
    measured: list[Prompt]
    # Measured prompts sent more than once because the corpus is too small;
    # repeats inflate suffix decoding's acceptance, so it is reported.
    repeated: int


def schedule(prompts: list[Prompt], warmup: int, measured: int, seed: int) -> Schedule:
    """Seeded shuffle; warmup prompts come from the end so measured ones stay distinct longest."""
    order = list(prompts)
    random.Random(seed).shuffle(order)
    measured_list = [order[i % len(order)] for i in range(measured)]
    warmup_list = [order[-1 - (i % len(order))] for i in range(warmup)]
    return Schedule(warmup_list, measured_list, repeated=max(0, measured - len(order)))

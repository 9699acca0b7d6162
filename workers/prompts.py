"""Prompt corpora on disk (JSONL) and the seeded order in which a run sends them."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grid.errors import ConfigError


@dataclass(frozen=True)
class Prompt:
    """One corpus entry: a raw prompt (completions) or chat messages."""

    prompt_id: str
    prompt: str | None = None
    messages: tuple[dict[str, str], ...] | None = None


def load_corpus(path: Path) -> list[Prompt]:
    """Read a corpus JSONL file; each line has `id` and `prompt` or `messages`."""
    if not path.is_file():
        raise ConfigError(f"corpus file {path} is missing; build it with `make assets` (python -m assets)")
    prompts = []
    with path.open() as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row: dict[str, Any] = json.loads(line)
                prompt_id = str(row["id"])
            except (json.JSONDecodeError, KeyError) as exc:
                raise ConfigError(f"{path}:{line_no}: bad corpus row ({exc}); each row needs `id`") from exc
            if ("prompt" in row) == ("messages" in row):
                raise ConfigError(f"{path}:{line_no}: a row needs exactly one of `prompt`, `messages`")
            messages = tuple(row["messages"]) if "messages" in row else None
            prompts.append(Prompt(prompt_id, row.get("prompt"), messages))
    if not prompts:
        raise ConfigError(f"corpus file {path} has no prompts")
    return prompts


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

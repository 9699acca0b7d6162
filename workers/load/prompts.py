"""Prompt corpora on disk and the seeded order in which a run sends them."""

from __future__ import annotations

import hashlib
import json
import random
import socket
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from store.atomic import write_atomic
from store.fs import StoreError, StorePath, StoreRoot, redact
from vocab.errors import ConfigError
from workers.load.traces import Skipped, read_rows

if TYPE_CHECKING:
    from vocab.cells import Cell


@dataclass(frozen=True)
class Prompt:
    """One corpus entry: a raw prompt (completions) or chat messages."""

    prompt_id: str
    prompt: str | None = None
    messages: tuple[dict[str, str], ...] | None = None

    @cached_property
    def content_hash(self) -> str:
        """The prompt's identity by content (text or messages), not by id.

        Two rows with the same text are the same prompt to an engine's prefix
        cache and suffix tree, whatever their ids or corpora (`mix` reuses other
        corpora's rows). Cached: schedules and audits hash every prompt many times.
        """
        content = self.prompt if self.prompt is not None else list(self.messages or ())
        blob = json.dumps(content, sort_keys=True, ensure_ascii=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True)
class Corpus:
    """A loaded corpus and the bad rows left out of it (only under skip_bad_rows)."""

    prompts: list[Prompt]
    skipped_rows: int = 0
    # The first few skipped rows' "file:row: reason", for the log and the results.
    skip_reasons: tuple[str, ...] = ()
    # content_sha256 of what was read: the corpus's identity for a run (planned, recorded, checked).
    sha256: str | None = None

    @cached_property
    def distinct_count(self) -> int:
        """How many distinct prompts it holds (the pre-launch audit asks once per cell)."""
        return len(distinct(self.prompts))


HASH_CHUNK_BYTES = 1 << 20
# Hex digits of a corpus hash shown in one-line messages (meta.json and the store keep all 64).
SHOWN_HASH_CHARS = 16


def content_sha256(path: Path) -> str:
    """sha256 of a corpus's bytes: a file's own; a folder's (save_to_disk) over its files, in path order.

    A folder's digest covers each file's relative path and sha256, so a renamed,
    added or changed file changes it.
    """
    if not path.is_dir():
        return _file_sha256(path)
    lines = [
        f"{file.relative_to(path).as_posix()}\0{_file_sha256(file)}\n"
        for file in sorted(p for p in path.rglob("*") if p.is_file())
    ]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


# Under <cache_dir>: local copies of corpora read from a URL data_dir, one folder per content hash.
CORPUS_COPIES = "corpora"


def corpus_file(data_dir: StoreRoot, relative: str, cache_dir: Path, planned: str | None = None) -> Path:
    """The local file that corpus `relative` (a CorpusSpec.path) is read from.

    A local data_dir (or an absolute path): the file itself. A URL data_dir
    (paths.data_dir=s3://bucket/prefix), one copy for every node: the object is
    fetched into <cache_dir>/corpora/<its sha256>/<name>, named by its content;
    a copy there with the `planned` hash is read without fetching again.
    """
    if Path(relative).is_absolute():
        return Path(relative)
    if not isinstance(data_dir, StorePath):
        return data_dir / relative
    name = Path(relative).name
    copies = cache_dir / CORPUS_COPIES
    if (
        planned is not None
        and (cached := copies / planned / name).is_file()
        and content_sha256(cached) == planned
    ):
        return cached
    remote = data_dir / relative
    try:
        if remote.is_dir():
            raise ConfigError(
                f"corpus {remote} is a folder; from a URL data_dir only files (JSONL, Parquet) are read: "
                "write the trace as one file (Dataset.to_parquet) or give the corpus a local path"
            )
        data = remote.read_bytes()
    except FileNotFoundError as exc:
        raise ConfigError(
            f"corpus file {remote} is missing; build the shipped corpora into it with `python -m assets "
            f"paths.data_dir={redact(str(data_dir))}` (with the run's overrides), or point the corpus's "
            "`path` at your own trace"
        ) from exc
    except (OSError, StoreError) as exc:
        raise ConfigError(f"corpus file {remote} cannot be read: {redact(str(exc))}") from exc
    copy = copies / hashlib.sha256(data).hexdigest() / name
    if not copy.is_file():
        write_atomic(copy, lambda tmp: tmp.write_bytes(data))
    return copy


class CorpusChanged(ConfigError):
    """A corpus file does not hash to what the driver planned for it."""


def check_planned(
    corpus: Corpus, name: str, path: Path, planned: str | None, node: str | None = None
) -> None:
    """Stop a cell whose corpus, as this node read it, is not the one the driver planned (one line).

    `planned` is the sha256 the driver read before launch (None: nothing planned, nothing checked).
    """
    if planned is None or corpus.sha256 == planned:
        return
    node = node or socket.gethostname()
    shown, wanted = (corpus.sha256 or "?")[:SHOWN_HASH_CHARS], planned[:SHOWN_HASH_CHARS]
    raise CorpusChanged(
        f"node {node}: corpus '{name}' ({path}) has sha256 {shown}, the driver planned {wanted}: this "
        "node would send other prompts under the same cell key. Give every node the driver's bytes "
        "(build it from the same commit: `python -m assets` with the run's overrides, pins in "
        "assets/corpus_pins.txt; or copy the driver's file there), then resume"
    )


def check_planned_file(path: Path, name: str, planned: str | None, node: str | None = None) -> None:
    """check_planned on a corpus's bytes before it is read (before an engine starts for its cells)."""
    if planned is not None:
        check_planned(Corpus([], sha256=content_sha256(path)), name, path, planned, node)


def read_corpus(path: Path, format: str = "auto", skip_bad_rows: bool = False) -> Corpus:
    """Read a built corpus or a bring-your-own trace (JSONL, Parquet, save_to_disk folder).

    Formats and row shapes are in workers/load/traces.py. A bad row raises an error
    naming file, row and reason; with `skip_bad_rows` it is counted instead.
    The corpus carries the sha256 of its bytes (content_sha256), hashed before they are read.
    """
    if not path.exists():
        raise ConfigError(
            f"corpus file {path} is missing; build the shipped corpora with `make assets`, or point the "
            "corpus's `path` at your own trace (JSONL, Parquet or a save_to_disk folder; "
            "workers/load/traces.py)"
        )
    skipped = Skipped() if skip_bad_rows else None
    try:
        sha256 = content_sha256(path)
    except OSError:
        sha256 = None  # read_rows names the file and why it cannot be read
    prompts = [Prompt(r.prompt_id, r.prompt, r.messages) for r in read_rows(path, format, skipped)]
    count = skipped.count if skipped else 0
    if not prompts:
        raise ConfigError(
            f"corpus file {path} has no prompts" + (f" ({count} bad rows skipped)" if count else "")
        )
    return Corpus(prompts, count, tuple(skipped.reasons) if skipped else (), sha256)


def load_corpus(path: Path, format: str = "auto", skip_bad_rows: bool = False) -> list[Prompt]:
    """The prompts of `read_corpus`, for callers that need no skipped-row count."""
    return read_corpus(path, format, skip_bad_rows).prompts


def distinct(prompts: list[Prompt]) -> list[Prompt]:
    """The first row of each distinct prompt content, in corpus order."""
    seen: set[str] = set()
    out = []
    for prompt in prompts:
        if (h := prompt.content_hash) not in seen:
            seen.add(h)
            out.append(prompt)
    return out


def probe_prompts(prompts: list[Prompt], count: int) -> list[Prompt]:
    """The prompts the logprob probe scores after a cell's measurement (workers/load/probe.py)."""
    return prompts[:count]


def prompt_seed(seed: int, repeat: int) -> int:
    """Each repeat shuffles with its own seed; every lever of one repeat sees the same prompts."""
    return seed + repeat


@dataclass(frozen=True)
class Schedule:
    """Which prompts a run sends: warmup first, then the measured ones."""

    warmup: list[Prompt]
    measured: list[Prompt]
    # Measured requests whose prompt was sent earlier in this schedule (warm-up
    # or an earlier measured request); 0 unless load.allow_repeats let a small
    # corpus cycle. Repeats inflate suffix decoding's acceptance.
    repeated: int


class TooFewPrompts(ConfigError):
    """A corpus has fewer distinct prompts than a cell would send."""


def too_few_message(corpus: str, available: int, warmup: int, measured: int) -> str:
    return (
        f"corpus '{corpus}' has {available} distinct prompts but a cell sends {warmup} warm-up + "
        f"{measured} measured = {warmup + measured}; measured prompts must be new to the engine. "
        f"Lower load.num_prompts (or set ++grid.num_prompts.{corpus}={max(available - warmup, 0)}), "
        "lower load.warmup_requests, use a larger corpus, or set load.allow_repeats=true to measure "
        "with repeated prompts (each cell then records how many it reused)"
    )


def cell_schedule(cell: Cell, corpus: Corpus, allow_repeats: bool) -> Schedule:
    """A cell's warm-up and measured prompts: its load, its repeat's seed (runner and pre-launch audit)."""
    load = cell.load
    return schedule(
        corpus.prompts,
        load.warmup_requests,
        load.num_prompts,
        prompt_seed(load.seed, cell.repeat),
        allow_repeats=allow_repeats,
        corpus=cell.corpus.name,
    )


def schedule(
    prompts: list[Prompt],
    warmup: int,
    measured: int,
    seed: int,
    allow_repeats: bool = False,
    corpus: str = "corpus",
) -> Schedule:
    """Seeded shuffle of the distinct prompts; measured from the front, warm-up from the back.

    With at least warmup + measured distinct prompts the two sets are disjoint
    and nothing repeats; otherwise TooFewPrompts, unless `allow_repeats`, when
    the order cycles and `repeated` counts the measured requests that reuse a prompt.
    """
    order = distinct(prompts)
    if len(order) < warmup + measured and not allow_repeats:
        raise TooFewPrompts(too_few_message(corpus, len(order), warmup, measured))
    random.Random(seed).shuffle(order)
    measured_list = [order[i % len(order)] for i in range(measured)]
    warmup_list = [order[-1 - (i % len(order))] for i in range(warmup)]
    seen = {p.content_hash for p in warmup_list}
    repeated = 0
    for prompt in measured_list:
        h = prompt.content_hash
        repeated += h in seen
        seen.add(h)
    return Schedule(warmup_list, measured_list, repeated)

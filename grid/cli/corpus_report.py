"""`python -m grid corpus`: every configured corpus with its hash, size and prompt-length percentiles.

Built corpora carry a `<name>.meta.json` (assets/corpora.py) with their token
statistics and sha256; a bring-your-own trace without one is read to count its
prompts (and its bad rows), and its lengths show as unknown. The hash shown is
of the bytes on disk now (workers/load/prompts.py:content_sha256), what a run would
plan and record; a built corpus whose bytes no longer match its meta says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from grid.config.catalog import Catalog, active, catalog_of
from grid.config.compose import check_run_mode, compose_config, pop_format
from store.fs import StoreRoot
from vocab.console import Col, make_console, print_table, write_rows
from vocab.errors import ConfigError
from vocab.paths import data_path, project_path
from vocab.schema import CorpusSpec

# Hex digits of the hash in the table (format=json and meta.json carry all 64).
SHOWN = 16
COLUMNS = ("corpus", "sha256", "endpoint", "prompts", "cap", "p50", "p90", "p99", "max", "licenses", "state")
NUMERIC = ("prompts", "cap", "p50", "p90", "p99", "max")


def corpus_rows(
    data_dir: StoreRoot, catalog: Catalog | None = None, cache_dir: Path | None = None
) -> list[dict[str, Any]]:
    """One row per corpus of the catalog (user folders, conf/corpus/, the config's own), as plain data."""
    catalog = catalog or active()
    return [describe(catalog.load(CorpusSpec, name), data_dir, cache_dir) for name in catalog.names("corpus")]


def describe(spec: CorpusSpec, data_dir: StoreRoot, cache_dir: Path | None = None) -> dict[str, Any]:
    """Hash, size and lengths from the meta file, else from reading the trace itself.

    From a URL data_dir the corpus is fetched into `cache_dir` (default .cache) to be hashed.
    """
    from workers.load.prompts import content_sha256, corpus_file, read_corpus

    path = Path(spec.path) if Path(spec.path).is_absolute() else data_dir / spec.path
    row: dict[str, Any] = {"corpus": spec.name, "endpoint": spec.endpoint, "path": str(path)}
    meta_file = path.with_suffix(".meta.json")
    local = None
    if path.exists():
        try:
            local = corpus_file(data_dir, spec.path, cache_dir or project_path(".cache"))
        except ConfigError as exc:
            return row | {"state": f"unreadable: {exc}", "licenses": spec.license}
        row["sha256"] = content_sha256(local)
    if meta_file.is_file():
        meta = json.loads(meta_file.read_text())
        stats = meta.get("prompt_tokens", {})
        row |= {"prompts": meta.get("prompts"), "cap": meta.get("max_prompt_tokens")}
        row["state"] = meta_state(meta.get("sha256"), row.get("sha256"))
        row |= {key: stats.get(key) for key in ("p50", "p90", "p99", "max")}
        licenses = meta.get("licenses", [])
        row["licenses"] = ", ".join(licenses) if len(licenses) <= 2 else f"{len(licenses)} kinds"
        return row
    if local is None:
        fix = "run `make assets`" if not Path(spec.path).is_absolute() else "no such file"
        return row | {"state": f"missing: {fix}", "licenses": spec.license}
    try:  # reads the whole trace; only for files without meta
        corpus = read_corpus(local, spec.format, spec.skip_bad_rows)
    except ConfigError as exc:
        return row | {"state": f"unreadable: {exc}", "licenses": spec.license}
    state = f"own trace, {corpus.skipped_rows} bad rows skipped" if corpus.skipped_rows else "own trace"
    return row | {"prompts": len(corpus.prompts), "licenses": spec.license, "state": state}


def meta_state(recorded: str | None, actual: str | None) -> str:
    """'' when the file has the bytes its meta hashed; else what is wrong and the fix."""
    if actual is None:
        return "missing: run `make assets`"
    if recorded is None:
        return "built without a hash: rebuild with `make assets`"
    if recorded != actual:
        return f"changed since built (meta says {recorded[:SHOWN]}): rebuild with `make assets`"
    return ""


def corpus(overrides: list[str], console: Console | None = None) -> int:
    """Print the table, or JSON with `format=json` (like `plan`), or `format=csv|md`."""
    fmt, rest = pop_format(overrides, ("table", "json", "csv", "md"))
    cfg = compose_config(rest)
    check_run_mode(cfg)
    paths = cfg.paths
    rows = corpus_rows(
        data_path(paths.data_dir, paths.store_options), catalog_of(cfg), project_path(paths.cache_dir)
    )
    if fmt == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if fmt in ("csv", "md"):
        write_rows(fmt, COLUMNS, [[row.get(c) for c in COLUMNS] for row in rows], sys.stdout)
        return 0
    columns = [
        Col(
            c,
            justify="right" if c in NUMERIC else "left",
            no_wrap=c != "state",
            want=20 if c == "state" else 0,
        )
        for c in COLUMNS
    ]
    cells = []
    for row in rows:
        shown = {**row, "sha256": row.get("sha256", "")[:SHOWN] or None}
        cells.append(["" if shown.get(c) is None else str(shown[c]) for c in COLUMNS])
    # At a log's width the least needed columns go first (named below the table); format=json has all.
    print_table(
        console or make_console(),
        "corpora (prompt tokens under the embedded model's tokenizer)",
        columns,
        cells,
        drop=("licenses", "endpoint", "max", "p99", "cap"),
        whole="format=json",
    )
    return 0

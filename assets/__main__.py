"""`python -m assets [--only NAME,...] [overrides]`: prepare the embedded model and corpora (idempotent).

`--only` builds the named corpora and no others (`make test` builds the two the real-engine
tests read first, and the rest beside them).

The model comes first: its tokenizer caps the corpora to the composed config's
max_model_len - max_tokens (e.g. `python -m assets load=study engine.max_model_len=16384`).
With a URL paths.data_dir (s3://bucket/prefix, one copy for a cluster) the
corpora are built under <cache_dir>/data-build/ and each one whose bytes the
URL lacks is uploaded there, its meta.json after it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from assets import corpora, dummy_models, smollm2
from grid.config.compose import compose_config
from store.atomic import write_atomic
from store.fs import StoreError, StorePath, os_error_line, redact
from vocab.errors import ConfigError, GridError
from vocab.paths import data_path, project_path

# The config keys this command reads (the rest of the config is composed, and checked, but unused).
READS = (
    "paths.models_dir",
    "paths.data_dir",
    "paths.cache_dir",
    "paths.store_options",
    "engine.max_model_len",
    "load.max_tokens",
)


def usage() -> str:
    """`python -m assets --help`: this module's docstring and the keys it reads, with their meanings."""
    from vocab.cli_reference import help_lines

    keys = help_lines(["paths", "engine", "load"], only=set(READS))
    return "\n".join(
        [
            "usage: python -m assets [--only NAME,...] [key=value ...]",
            "",
            (__doc__ or "").strip(),
            "",
            "keys it reads (section.key=value; all of them: docs/cli.md):",
            *keys,
        ]
    )


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        print(usage())
        return 0
    try:
        only, argv = only_corpora(argv)
        corpora.check_only(only)  # a misspelt name before minutes of model conversion, not after
        cfg = compose_config(argv)
        model_dir = smollm2.ensure(project_path(cfg.paths.models_dir))
        dummy_models.ensure(project_path(cfg.paths.models_dir))
        max_prompt_tokens = int(cfg.engine.max_model_len) - int(cfg.load.max_tokens)
        if max_prompt_tokens <= 0:
            raise ConfigError(f"engine.max_model_len must exceed load.max_tokens (cap {max_prompt_tokens})")
        data_dir = data_path(cfg.paths.data_dir, cfg.paths.store_options)
        if isinstance(data_dir, StorePath):
            build_in = build_dir(project_path(cfg.paths.cache_dir), str(data_dir))
            built = corpora.ensure(build_in, model_dir, max_prompt_tokens, only)
            publish(built, data_dir)
        else:
            corpora.ensure(data_dir, model_dir, max_prompt_tokens, only)
    except (GridError, StoreError) as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a data store that does not answer (StoreUnreachable), a full disk
        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        return 2
    return 0


def only_corpora(argv: list[str]) -> tuple[list[str] | None, list[str]]:
    """`--only a,b` or `--only=a,b` (before or among the overrides) and the overrides without it."""
    rest = list(argv)
    for i, arg in enumerate(rest):
        if arg == "--only" or arg.startswith("--only="):
            value = arg.partition("=")[2] if "=" in arg else (rest[i + 1] if i + 1 < len(rest) else "")
            del rest[i : i + (1 if "=" in arg else 2)]
            names = [name for name in value.split(",") if name]
            if not names:
                raise ConfigError("--only needs corpus names, e.g. --only code_complete,chat_bench")
            return names, rest
    return None, rest


def build_dir(cache_dir: Path, url: str) -> Path:
    """Where corpora for a URL data_dir are built (and kept, so an unchanged build is not redone)."""
    return cache_dir / "data-build" / hashlib.sha256(url.encode()).hexdigest()[:16]


def publish(built: dict[str, Path], data_dir: StorePath) -> None:
    """Upload each built corpus whose bytes the URL lacks (by its meta's sha256), then its meta."""
    for local in built.values():
        meta = json.loads(corpora.meta_path(local).read_text())
        remote = data_dir / "corpora" / local.name
        remote_meta = remote.with_suffix(".meta.json")
        try:
            current = json.loads(remote_meta.read_text()) if remote_meta.is_file() else {}
        except (OSError, ValueError):
            current = {}
        if current.get("sha256") == meta["sha256"] and remote.is_file():
            continue
        write_atomic(remote, lambda tmp, source=local: tmp.write_bytes(source.read_bytes()))
        write_atomic(
            remote_meta, lambda tmp, source=local: tmp.write_bytes(corpora.meta_path(source).read_bytes())
        )
        print(f"assets: corpus {meta['name']} ({meta['sha256'][:16]}) -> {redact(str(remote))}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

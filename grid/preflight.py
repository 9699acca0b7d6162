"""Checks that need the filesystem, done before anything is launched."""

from __future__ import annotations

import shutil
from pathlib import Path

from grid.cells import Cell
from grid.errors import ConfigError


def check_inputs(cells: list[Cell], models_dir: Path, data_dir: Path) -> None:
    """Every local model folder, corpus file and engine command exists."""
    seen: set[str] = set()
    for cell in cells:
        model = cell.engine_spec.model
        if "{models_dir}" in model.path and model.name not in seen:
            path = Path(model.path.replace("{models_dir}", str(models_dir)))
            if not (path / "config.json").is_file():
                raise ConfigError(f"model '{model.name}' has no weights at {path}; run `make assets`")
        seen.add(model.name)
        corpus_file = data_dir / cell.corpus.path
        if not corpus_file.is_file():
            raise ConfigError(f"corpus '{cell.corpus.name}' file {corpus_file} is missing; run `make assets`")
        command = cell.engine_spec.engine.command
        if not command:
            raise ConfigError("engine.command is empty; e.g. engine.command=[vllm,serve]")
        if command[0] != "{python}" and shutil.which(command[0]) is None:
            raise ConfigError(f"engine command '{command[0]}' not found on PATH; set engine.command")

"""Checks that need the filesystem, done before anything is launched."""

from __future__ import annotations

import shutil
from importlib.metadata import entry_points
from pathlib import Path

from grid.cells import Cell
from grid.errors import ConfigError


def check_inputs(cells: list[Cell], models_dir: Path) -> None:
    """Every local model folder and engine command exists.

    The corpora are read once, right after, by the prompt audit (grid/prompt_audit.py):
    a malformed row stops the run there, before any engine starts.
    """
    seen: set[str] = set()
    for cell in cells:
        model = cell.engine_spec.model
        if "{models_dir}" in model.path and model.name not in seen:
            path = Path(model.path.replace("{models_dir}", str(models_dir)))
            if not (path / "config.json").is_file():
                raise ConfigError(f"model '{model.name}' has no weights at {path}; run `make assets`")
        seen.add(model.name)
        check_plugin(cell)
        command = cell.engine_spec.engine.command
        if not command:
            raise ConfigError("engine.command is empty; e.g. engine.command=[vllm,serve]")
        if command[0] != "{python}" and shutil.which(command[0]) is None:
            raise ConfigError(f"engine command '{command[0]}' not found on PATH; set engine.command")


PLUGIN_GROUP = "vllm.general_plugins"


def check_plugin(cell: Cell) -> None:
    """A lever that needs a vLLM plugin must find it installed beside the engine.

    Checked only for engines run with the harness's own interpreter ({python});
    a cluster's own vLLM installation is its owner's to equip.
    """
    plugin = cell.engine_spec.lever.requires_plugin
    if plugin is None or cell.engine_spec.engine.command[:1] != ["{python}"]:
        return
    installed = {ep.name for ep in entry_points(group=PLUGIN_GROUP)}
    if plugin not in installed:
        raise ConfigError(
            f"lever '{cell.engine_spec.lever.name}' needs the vLLM plugin '{plugin}' "
            f"(entry point group {PLUGIN_GROUP}), which is not installed; without it the "
            "lever would silently measure plain suffix decoding"
        )

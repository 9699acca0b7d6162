"""Compose the run's config from conf/ and command-line overrides (Hydra compose API).

The compose API, not @hydra.main: no working-directory change, no output dirs,
and every composition error becomes one ConfigError line before any launch.
"""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from grid import schema
from grid.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


def compose_config(overrides: list[str] | None = None, conf_dir: Path = CONF_DIR) -> DictConfig:
    """Return the resolved, read-only run config for `overrides` (e.g. ["experiment=smoke"])."""
    schema.register()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
            cfg = compose(config_name="config", overrides=list(overrides or []))
        OmegaConf.resolve(cfg)
    except (HydraException, OmegaConfBaseException) as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        first_line = "; ".join(lines[:2]) or type(exc).__name__
        raise ConfigError(
            f"bad config or override ({first_line}); "
            f"check the names under {conf_dir} and the override syntax key=value"
        ) from exc
    OmegaConf.set_readonly(cfg, True)
    return cfg


def pop_format(overrides: list[str]) -> tuple[str, list[str]]:
    """Split a command's own `format=table|json` from the Hydra overrides (plan, corpus)."""
    fmt, rest = "table", []
    for item in overrides:
        if item.startswith("format="):
            fmt = item.split("=", 1)[1]
        else:
            rest.append(item)
    if fmt not in ("table", "json"):
        raise ConfigError(f"format must be table or json, got '{fmt}'")
    return fmt, rest

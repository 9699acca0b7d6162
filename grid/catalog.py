"""Named specs (models, levers, corpora) loaded from conf/<group>/<name>.yaml.

A grid names many models, levers and corpora at once, which Hydra's one-option-
per-group defaults cannot express; each named file is merged onto its schema
(unknown keys fail) and checked against its file name.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from grid.compose import CONF_DIR
from grid.errors import ConfigError
from grid.schema import CorpusSpec, LeverSpec, ModelSpec

SpecT = TypeVar("SpecT", ModelSpec, LeverSpec, CorpusSpec)

GROUPS: dict[type, str] = {ModelSpec: "model", LeverSpec: "lever", CorpusSpec: "corpus"}

# `${csv:${dynamic_ks}}` in a spec file: a list as "4,6,12", so an environment
# variable that a plugin reads is derived from the spec's own field, not typed twice.
OmegaConf.register_new_resolver("csv", lambda values: ",".join(str(v) for v in values), replace=True)


def available(group: str, conf_dir: Path = CONF_DIR) -> list[str]:
    """Names of the YAML files in conf/<group>/, sorted."""
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def load_spec(kind: type[SpecT], name: str, conf_dir: Path = CONF_DIR) -> SpecT:
    """Load conf/<group>/<name>.yaml as a validated `kind` instance."""
    group = GROUPS[kind]
    path = conf_dir / group / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(available(group, conf_dir)) or "none"
        raise ConfigError(f"unknown {group} '{name}': known {group}s are {known} (files in {path.parent})")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(kind), OmegaConf.load(path))
        spec = OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        raise ConfigError(
            f"{path}: {str(exc).splitlines()[0]}; fix the file against grid/schema.py:{kind.__name__}"
        ) from exc
    if spec.name != name:
        raise ConfigError(f"{path}: name '{spec.name}' must equal the file name '{name}'")
    return spec

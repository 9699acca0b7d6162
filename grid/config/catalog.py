"""Named specs (models, levers, corpora): files in conf/<group>/<name>.yaml and the run config.

A grid names many models, levers and corpora at once, which Hydra's one-option-
per-group defaults cannot express; each named spec is its file, searched in
the user's config folders first (hydra.searchpath, LEVER_GRID_CONF) and then the
shipped conf/, with the fields the run config gives it (`model:`, `lever:`,
`corpus:`, e.g. `+corpus.mytrace.path=/data/t.jsonl`) merged over it, all
merged onto its schema (unknown keys fail) and checked against its name.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from vocab.errors import ConfigError
from vocab.schema import Config, CorpusSpec, LeverSpec, ModelSpec

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
# User config folders, searched before CONF_DIR: `LEVER_GRID_CONF=/my/conf:/other`.
CONF_ENV = "LEVER_GRID_CONF"

SpecT = TypeVar("SpecT", ModelSpec, LeverSpec, CorpusSpec)

GROUPS: dict[type, str] = {ModelSpec: "model", LeverSpec: "lever", CorpusSpec: "corpus"}
KINDS: dict[str, type] = {group: kind for kind, group in GROUPS.items()}
PLURAL = {"model": "models", "lever": "levers", "corpus": "corpora"}

# `${csv:${dynamic_ks}}` in a spec file: a list as "4,6,12", so an environment
# variable that a plugin reads is derived from the spec's own field, not typed twice.
OmegaConf.register_new_resolver("csv", lambda values: ",".join(str(v) for v in values), replace=True)


def field_names(kind: type) -> list[str]:
    return sorted(f.name for f in fields(kind))


@dataclass(frozen=True)
class Catalog:
    """Where named specs come from: files in `dirs` (the first folder that has one wins), then
    `given`: per group, name -> fields from the run config, merged over that name's file or,
    without one, a spec of their own."""

    dirs: tuple[Path, ...] = (CONF_DIR,)
    given: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def file(self, group: str, name: str) -> Path | None:
        return next((p for d in self.dirs if (p := d / group / f"{name}.yaml").is_file()), None)

    def files(self, group: str) -> list[str]:
        return sorted({p.stem for d in self.dirs for p in (d / group).glob("*.yaml")})

    def names(self, group: str) -> list[str]:
        """Every name of `group`: files in any folder and specs the run config gives, sorted."""
        return sorted({*self.files(group), *self.given.get(group, {})})

    def where(self, group: str) -> str:
        return ", ".join(str(d / group) for d in self.dirs)

    def known(self, group: str) -> str:
        return (
            f"known {PLURAL[group]} are {', '.join(self.names(group)) or 'none'} "
            f"(files in {self.where(group)}, or given as +{group}.<name>.<field>=...)"
        )

    def unknown(self, group: str, name: str) -> ConfigError:
        return ConfigError(f"unknown {group} '{name}': {self.known(group)}")

    def load(self, kind: type[SpecT], name: str) -> SpecT:
        """The validated `kind` instance named `name`."""
        group = GROUPS[kind]
        path = self.file(group, name)
        given = self.given.get(group, {}).get(name)
        if path is None and given is None:
            raise self.unknown(group, name)
        layers = [_schema_layer(kind)]
        if path is not None:
            try:
                layers.append(_parsed_layer(path.read_bytes()))
            except (OSError, OmegaConfBaseException) as exc:
                raise ConfigError(f"{path}: {str(exc).splitlines()[0]}") from exc
            except yaml.YAMLError as exc:  # a syntax error: file, line and column, not a traceback
                raise ConfigError(yaml_problem(path, exc)) from exc
        if given is not None:
            if not isinstance(given, Mapping):
                others = [n for n in self.names(group) if n != name]
                raise ConfigError(not_a_spec(group, name, given, others))
            unknown = sorted(set(given) - {f.name for f in fields(kind)})
            if unknown:
                raise ConfigError(
                    f"unknown key '{group}.{name}.{unknown[0]}': a {group} has "
                    f"{', '.join(field_names(kind))} (vocab/schema.py:{kind.__name__})"
                )
            layers.append(OmegaConf.create({"name": name} if path is None else {}))
            layers.append(OmegaConf.create(dict(given)))
        where = str(path) if given is None else f"{group}.{name} (over {path or 'no file'})"
        try:
            spec = OmegaConf.to_object(OmegaConf.merge(*layers))
        except OmegaConfBaseException as exc:
            reason = str(exc).splitlines()[0]
            if path is None and "missing mandatory value" in reason.lower():
                raise ConfigError(
                    f"{group} '{name}' has no file (known {PLURAL[group]}: {', '.join(self.files(group))}), "
                    f"so {group}.{name} must give a whole {group}: {reason}"
                ) from exc
            raise ConfigError(f"{where}: {reason}; fix it against vocab/schema.py:{kind.__name__}") from exc
        if spec.name != name:
            raise ConfigError(f"{where}: name '{spec.name}' must equal the {group}'s name '{name}'")
        return spec


# The layers merged into a spec, built once: every compose checks each named spec and every
# expansion loads them again (the unit tests compose ~600 configs, ~5,800 loads; these two layers
# were ~70% of the loads' time, profiled). OmegaConf.merge copies its inputs and leaves them as
# they were, so the cached layers are shared read-only.
@functools.cache
def _schema_layer(kind: type) -> DictConfig:
    return OmegaConf.structured(kind)


@functools.lru_cache(maxsize=512)
def _parsed_layer(text: bytes) -> DictConfig | ListConfig:
    """A spec file's layer, by its bytes (read each time: an edited file is parsed again)."""
    return OmegaConf.load(io.BytesIO(text))


def not_a_spec(group: str, name: str, value: Any, known: list[str]) -> str:
    """The message for `+corpus.skip_bad_rows=true`: a field given where a name belongs."""
    value = str(value).lower() if isinstance(value, bool) or value is None else value
    return (
        f"{group}.{name}={value} gives no {group}'s fields: set one {group}'s field as "
        f"+{group}.<name>.<field>=value (e.g. +{group}.{known[0] if known else 'x'}.{name}={value}); "
        f"known {PLURAL[group]}: {', '.join(known) or 'none'}"
    )


def user_dirs(config: Config | DictConfig) -> tuple[Path, ...]:
    return tuple(Path(d) for d in config.paths.user_conf)


def catalog_of(config: Config | DictConfig) -> Catalog:
    """The catalog a composed config names specs from: its user folders, conf/, its given specs."""
    given: dict[str, Mapping[str, Any]] = {}
    for group in GROUPS.values():
        entries = getattr(config, group)
        if isinstance(entries, DictConfig):
            entries = OmegaConf.to_container(entries, resolve=True)
        given[group] = dict(entries)
    dirs = [*user_dirs(config), CONF_DIR]
    return Catalog(tuple(dict.fromkeys(dirs)), given)


# The catalog of the config composed last (grid.config.compose sets it): what load_spec reads
# when its caller names no source (grid/plan/anchor.py passes conf/ itself).
_active: Catalog | None = None


def activate(catalog: Catalog | None) -> None:
    global _active
    _active = catalog


def active() -> Catalog:
    return _active or Catalog((*env_dirs(), CONF_DIR))


def env_dirs() -> tuple[Path, ...]:
    """The folders LEVER_GRID_CONF names (os.pathsep-separated), each checked to exist."""
    dirs = []
    for entry in os.environ.get(CONF_ENV, "").split(os.pathsep):
        if entry.strip():
            path = Path(entry.strip()).expanduser().resolve()
            if not path.is_dir():
                raise ConfigError(f"{CONF_ENV} names {entry}, which is not a folder")
            dirs.append(path)
    return tuple(dirs)


def source(conf_dir: Path | Catalog | None) -> Catalog:
    """A catalog for load_spec's `conf_dir`: that one folder, or (None, conf/) the active catalog."""
    if isinstance(conf_dir, Catalog):
        return conf_dir
    if conf_dir is None or Path(conf_dir) == CONF_DIR:
        return active()
    return Catalog((Path(conf_dir),))


def available(group: str, conf_dir: Path | Catalog | None = None) -> list[str]:
    """Every name of `group` (files in the catalog's folders and specs given in the run config), sorted."""
    return source(conf_dir).names(group)


def load_spec(kind: type[SpecT], name: str, conf_dir: Path | Catalog | None = None) -> SpecT:
    """The validated `kind` named `name`, from a Catalog, one conf folder, or the active catalog."""
    return source(conf_dir).load(kind, name)


def yaml_problem(path: Path | str | None, exc: yaml.YAMLError) -> str:
    """'<file>, line L, column C: <problem>; fix the YAML there' for a file that does not parse
    (`path` None: the file the parser names)."""
    mark = getattr(exc, "problem_mark", None)
    path = path or getattr(mark, "name", None) or "a config file"
    where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    return f"{path}{where}: not valid YAML ({context + ': ' if context else ''}{problem}); fix the file there"

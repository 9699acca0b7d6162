"""Compose the run's config from conf/ and command-line overrides (Hydra compose API).

The compose API, not @hydra.main: no working-directory change, no output dirs,
and every composition error becomes one ConfigError line before any launch.

The user's config folders (`hydra.searchpath=[file:///my/conf]` on the command
line, then `LEVER_GRID_CONF=/my/conf[:/other]`) are searched before the shipped
conf/, by Hydra for experiments, engines, loads and clusters and by
grid/config/catalog.py for models, levers and corpora: a file there with a shipped name
replaces the shipped one. Every key of the composed config is checked against
vocab/schema.py, `+key=value` included, and every name it gives must exist.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import MISSING, Field, asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from analysis.sequential import looks_problem
from grid.config.catalog import (
    CONF_DIR,
    GROUPS,
    KINDS,
    PLURAL,
    Catalog,
    activate,
    catalog_of,
    env_dirs,
    not_a_spec,
    yaml_problem,
)
from store.fs import is_url, redact, url_secret_problem
from store.layout import component_flaw, component_problem
from vocab import schema
from vocab.errors import ConfigError
from vocab.paths import PROJECT_ROOT

__all__ = ["CONF_DIR", "compose_config", "pop_format", "user_conf_dirs"]

# Hydra's config groups in conf/config.yaml's defaults list.
CONFIG_GROUPS = ("cluster", "engine", "experiment", "load")
SEARCHPATH = "hydra.searchpath="
BAD = "bad config or override: "


def searchpath_dirs(overrides: list[str]) -> tuple[list[Path], list[str]]:
    """The folders of `hydra.searchpath=[file:///a,/b]` among `overrides`, and the other overrides."""
    dirs, rest = [], []
    for item in overrides:
        if not item.startswith(SEARCHPATH):
            rest.append(item)
            continue
        try:
            value = OverridesParser.create().parse_overrides([item])[0].value()
        except HydraException as exc:
            raise ConfigError(redact(f"bad override '{item}': {str(exc).splitlines()[0]}")) from exc
        for entry in value if isinstance(value, list) else [value]:
            text = str(entry)
            if text.startswith("file://"):
                text = text.removeprefix("file://")
            elif "://" in text:
                raise ConfigError(
                    f"hydra.searchpath: only folders are searched (file:///my/conf), not '{entry}'"
                )
            path = Path(text).expanduser().resolve()
            if not path.is_dir():
                raise ConfigError(f"hydra.searchpath names {entry}, which is not a folder")
            dirs.append(path)
    return dirs, rest


def user_conf_dirs(overrides: list[str]) -> tuple[list[Path], list[str]]:
    """User config folders in search order (command line, then LEVER_GRID_CONF), and the other overrides."""
    dirs, rest = searchpath_dirs(overrides)
    return list(dict.fromkeys([*dirs, *env_dirs()])), rest


def check_user_yaml(dirs: list[Path]) -> None:
    """Every YAML file of the user's config folders parses, used by this command or not: a broken
    file found only when a later grid names it would be found hours later (the shipped conf/ is
    checked by the tests)."""
    for folder in dirs:
        for path in sorted(folder.rglob("*.yaml")):
            try:
                yaml.safe_load(path.read_text(encoding="utf-8"))
            except yaml.YAMLError as exc:
                raise ConfigError(yaml_problem(path, exc)) from exc
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: cannot be read ({exc}); fix or remove the file") from exc


def compose_config(
    overrides: list[str] | None = None, conf_dir: Path = CONF_DIR, stores: Sequence[str] = ()
) -> DictConfig:
    """Return the resolved, read-only run config for `overrides` (e.g. ["experiment=smoke"]).

    `stores`: the stores a command names besides paths.store (`grid compare stores=[A,B]`), checked
    as paths.store is (no credentials, each named `stores[i]`), and which paths.store_options
    configure as well."""
    schema.register()
    dirs, rest = user_conf_dirs(list(overrides or []))
    if Path(conf_dir) != CONF_DIR:
        dirs.append(Path(conf_dir))
    files = Catalog((*dirs, CONF_DIR))
    check_user_yaml(dirs)
    check_spec_group_overrides(rest, files)
    check_config_group_names(rest, files)
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            search = GlobalHydra.instance().config_loader().get_search_path()
            for path in dirs:
                search.prepend("lever-grid user", f"file://{path}", anchor=SearchPathQuery(provider="main"))
            # Any hydra.searchpath override makes Hydra build its sources again from the
            # search path above; Hydra would put its own entries after conf/.
            cfg = compose(config_name="config", overrides=[*rest, "hydra.searchpath=[]"])
        OmegaConf.resolve(cfg)
    except MissingConfigException as exc:
        raise missing_option(exc, files) from exc
    except (HydraException, OmegaConfBaseException) as exc:
        raise composition_error(exc, files) from exc
    except yaml.YAMLError as exc:  # a config file (ours or the user's) that does not parse
        raise ConfigError(yaml_problem(None, exc)) from exc
    check_config(cfg, dirs, stores)
    OmegaConf.set_readonly(cfg, True)
    activate(catalog_of(cfg))
    check_force(cfg)
    return cfg


RUN_MODES = ("resume", "failed", "all")


def run_mode_problem(mode: str) -> str | None:
    """Why `run.mode` is not one of the modes, or None."""
    if mode in RUN_MODES:
        return None
    return f"run.mode must be one of {', '.join(RUN_MODES)}, got '{mode}'"


def check_run_mode(cfg: DictConfig) -> None:
    """For the commands that read a store without running (status, corpus, report, summary): a bad
    run.mode is an error there too, not ignored (run, plan and simulate list it among their problems)."""
    if (problem := run_mode_problem(cfg.run.mode)) is not None:
        raise ConfigError(problem)


def check_config(cfg: DictConfig, dirs: list[Path], stores: Sequence[str] = ()) -> None:
    """Unknown keys (also those `+key=value` added), names that do not exist, bad given specs; and
    `stores` (compose_config's) as paths.store is checked."""
    check_keys(OmegaConf.to_container(cfg, resolve=True), schema.Config)
    if cfg.paths.user_conf:
        raise ConfigError(
            "paths.user_conf is filled in from hydra.searchpath=[file:///my/conf] and "
            "LEVER_GRID_CONF=/my/conf; name your folders there"
        )
    cfg.paths.user_conf = [str(d) for d in dirs]
    # Before a name is looked up: `grid.models=['../model/tiny']` would find conf/model/../model/tiny.yaml.
    raise_all(path_component_problems(cfg))
    catalog = catalog_of(cfg)
    check_names(cfg, catalog)
    problems = value_problems(OmegaConf.to_container(cfg, resolve=True), schema.Config)
    problems += spec_value_problems(cfg, catalog)
    secret = url_secret_problem(cfg.paths.store, cfg.paths.store_options) or url_secret_problem(
        cfg.paths.data_dir, None, "paths.data_dir"
    )
    # A `stores` entry is named as itself, never as paths.store (issue 45 item 8).
    secrets = [url_secret_problem(store, None, f"stores[{i}]") for i, store in enumerate(stores)]
    secret = secret or next(filter(None, secrets), None)
    if secret is not None:
        problems.append(secret)
    elif cfg.paths.store_options and not any(
        is_url(url) for url in (cfg.paths.store, cfg.paths.data_dir, *stores)
    ):
        problems.append(
            "paths.store_options apply to URL stores (s3://...) only, and neither paths.store nor "
            f"paths.data_dir{' nor a stores entry' if stores else ''} is one; drop them, or give "
            "paths.store=s3://bucket/prefix"
        )
    if cfg.grid.launches_per_argv and cfg.grid.engine_reuse != "shared":
        # Only shared launches place repeats on launches; elsewhere it would change nothing, silently.
        problems.append(
            f"grid.launches_per_argv={cfg.grid.launches_per_argv} applies to grid.engine_reuse=shared only "
            f"(under {cfg.grid.engine_reuse} it would change nothing); drop it or set "
            "grid.engine_reuse=shared"
        )
    if (looks := looks_problem(cfg.grid.sequential.looks)) is not None:
        problems.append(looks)
    raise_all(problems)


def path_component_problems(cfg: DictConfig) -> list[str]:
    """Every user string that becomes one path component, against store/layout.py's one rule:
    `name` (the report's and the confirmation's file), `session_id` (the session file, the engine
    logs) and each model, lever and corpus name (conf/<group>/<name>.yaml, the labels built of them).
    A spec's `path` (a trace, a model's weights) is a path on purpose and is not checked here."""
    grid = cfg.grid
    given: list[tuple[str, Any]] = [("name", cfg.name)]
    if cfg.session_id is not None:
        given.append(("session_id", cfg.session_id))
    for key, names in (
        ("grid.models", grid.models),
        ("grid.levers", grid.levers),
        ("grid.corpora", grid.corpora),
        ("grid.own_engine_corpora", grid.own_engine_corpora),
        ("grid.ks", grid.ks),
        ("grid.num_prompts", grid.num_prompts),
        ("plan.rates", cfg.plan.rates),
        *((group, cfg[group]) for group in GROUPS.values()),
    ):
        given += [(key, name) for name in names]
    given += [(f"grid.anchor.{group}", grid.anchor[group]) for group in GROUPS.values() if grid.anchor[group]]
    return [problem for key, value in given if (problem := component_problem(key, value)) is not None]


def raise_all(problems: list[str]) -> None:
    """One ConfigError: the problem itself, or a count and one line each (as grid/checks/preflight.py
    does)."""
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problems in the config:\n  " + "\n  ".join(problems))


# --- every value against its schema field's range, choices or emptiness (vocab/schema.py metadata) ---


# How to set a field, given its dotted key, where `key=value` on the command line would not do.
Fix = Callable[[str], str]


def value_problems(value: Any, tp: Any, path: tuple[str, ...] = (), fix: Fix | None = None) -> list[str]:
    """Every value of the composed `value` outside what its field of `tp` allows, one line each.

    Generated from the schema: each field says its allowed values in its metadata (RANGE, CHOICES,
    NONEMPTY; vocab/schema.py), so a field added with a range is checked here without more code.
    `fix` says how to set a field when `key=value` on the command line would not (a spec's file).
    """
    problems: list[str] = []
    if not (is_dataclass(tp) and isinstance(value, dict)):
        return problems
    hints = get_type_hints(tp)
    for spec_field in fields(tp):
        if spec_field.name not in value:
            continue
        item, hint, key = value[spec_field.name], hints[spec_field.name], (*path, spec_field.name)
        for inner in nested_schemas(hint):
            if isinstance(item, dict):
                problems += value_problems(item, inner, key, fix)
            elif isinstance(item, list):
                for index, element in enumerate(item):
                    problems += value_problems(element, inner, (*key, str(index)), fix)
        problems += field_problems(spec_field, item, ".".join(key), fix)
    return problems


def nested_schemas(hint: Any) -> list[type]:
    """The schema dataclasses a field holds: itself, or inside its list / dict / Optional."""
    if is_dataclass(hint) and isinstance(hint, type):
        return [hint]
    return [tp for arg in get_args(hint) for tp in nested_schemas(arg)]


def field_problems(spec_field: Field[Any], item: Any, key: str, fix: Fix | None) -> list[str]:
    """What is wrong with one field's value by its metadata: range, choices, emptiness."""
    meta, problems = spec_field.metadata, []
    default = field_default(spec_field)

    def how(where: str) -> str:
        if fix is not None:
            return fix(where)
        return f"set {where}=<value>" + (f" (default {default})" if default else "")

    if (allowed := meta.get(schema.RANGE)) is not None:
        for where, number in numbers(item, key):
            if not allowed.holds(number):
                why = f" ({allowed.why})" if allowed.why else ""
                problems.append(f"{where} must be {allowed.text()}, got {number}{why}; {how(where)}")
    if (choices := meta.get(schema.CHOICES)) is not None and item is not None and item not in choices:
        problems.append(f"{key} must be one of {', '.join(choices)}, got '{item}'; {how(key)}")
    if meta.get(schema.NONEMPTY) and isinstance(item, str) and not item.strip():
        problems.append(
            f"{key} is empty ('{item}'); it must name a folder, file or URL (an empty one means the "
            f"project's own folder); {how(key)}"
        )
    return problems


def field_default(spec_field: Field[Any]) -> str:
    """A field's default as a user would type it, or "" where there is none worth quoting."""
    if spec_field.default is MISSING or spec_field.default in (None, schema.MISSING, ""):
        return ""
    return str(spec_field.default)


def numbers(item: Any, key: str) -> Iterator[tuple[str, float]]:
    """(key, number) for a number, each number of a list, each value of a dict (grid.ks.suffix)."""
    if isinstance(item, bool) or item is None:
        return
    if isinstance(item, int | float):
        yield key, item
    elif isinstance(item, list):
        for element in item:
            yield from numbers(element, key)
    elif isinstance(item, dict):
        for name, element in item.items():
            yield from numbers(element, f"{key}.{name}")


def spec_value_problems(cfg: DictConfig, catalog: Catalog) -> list[str]:
    """Range problems of every model, lever and corpus the grid names or the config gives."""
    grid, problems = cfg.grid, []
    named = {
        "model": [*grid.models, grid.anchor.model],
        "lever": [*grid.levers, grid.anchor.lever],
        "corpus": [*grid.corpora, grid.anchor.corpus],
    }
    for kind, group in GROUPS.items():
        for name in dict.fromkeys([*named[group], *cfg[group]]):
            if name is None or name not in catalog.names(group):
                continue  # a name that does not exist is check_names's to report
            path = catalog.file(group, name)
            where = f"set it in {path} or " if path is not None else ""

            def fix(key: str, where: str = where) -> str:
                return f"{where}give +{key}=<value>"

            spec = asdict(catalog.load(kind, name))
            problems += value_problems(spec, kind, (group, name), fix)
    return problems


def check_force(cfg: DictConfig) -> None:
    """Every `run.force` entry starts some cell's key or label; one that starts none is a typo to name.

    ledger.select forces the cells whose key or label starts with an entry, so an entry that matches
    nothing would silently force nothing: say so, with the nearest labels (difflib).
    """
    if not cfg.run.force:
        return
    from grid.config.expand import expand, to_config  # expand imports the catalog, as this module does

    cells = expand(to_config(cfg))
    labels = sorted({prefix for cell in cells for prefix in label_prefixes(cell.label)})
    keys = [cell.key for cell in cells]
    problems = []
    for entry in map(str, cfg.run.force):
        if any(name.startswith(entry) for name in (*keys, *labels)):
            continue
        # Near labels only: a key is a hash, and a mistyped one has no neighbour worth naming.
        near = difflib.get_close_matches(entry, labels, n=4, cutoff=0.5)
        example = cells[0].label if cells else "model/lever/corpus/r0"
        hint = f"near matches: {', '.join(near)}" if near else f"cells are labelled like {example}"
        problems.append(
            f"run.force entry '{entry}' starts no cell's key or label, so it would force nothing ({hint}); "
            "give a cell key or a label prefix (`python -m grid plan` lists the grid), or drop it"
        )
    raise_all(problems)


def label_prefixes(label: str) -> list[str]:
    """`tiny/suffix-k8/chat/r0` and each shorter prefix at a '/': what an entry may name."""
    parts = label.split("/")
    return ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def check_spec_group_overrides(overrides: list[str], files: Catalog) -> None:
    """`model=tiny`, `+corpus=x`: Hydra would take these for config groups; say what is meant."""
    for item in overrides:
        key = item.lstrip("+~").split("=", 1)[0]
        if key in GROUPS.values():
            plural = PLURAL[key]
            raise ConfigError(
                f"'{item}': {plural} are named in grid.{plural}=[...] (known {plural}: "
                f"{', '.join(files.names(key))}); to change one's field: +{key}.<name>.<field>=value"
            )


def check_config_group_names(overrides: list[str], files: Catalog) -> None:
    """`experiment=smoke` names a file of conf/experiment/ or of a user folder; `experiment=../../x`
    would have Hydra load any YAML file as the experiment (and engine=, load=, cluster= likewise):
    a value that is not one plain name (store/layout.py's rule) is refused, with how to add one's own."""
    for item in overrides:
        key, sep, _ = item.lstrip("+~").partition("=")
        if not sep or key not in CONFIG_GROUPS:
            continue
        try:
            value = OverridesParser.create().parse_overrides([item])[0].value()
        except HydraException:
            continue  # Hydra's own line, from compose
        if value is None or (flaw := component_flaw(str(value))) is None:
            continue
        path_like = any(part in str(value) for part in ("/", "\\")) or value in (".", "..")
        why = "is a path" if path_like else f"is not a name (it {flaw})"
        raise ConfigError(
            f"{key} '{value}' {why}; {key}= takes the name of a file in a config folder (known: "
            f"{', '.join(files.names(key)) or 'none'}); to add your own, put it in "
            f"/my/conf/{key}/<name>.yaml and give hydra.searchpath=[file:///my/conf] "
            f"(or LEVER_GRID_CONF=/my/conf), then {key}=<name>"
        )


def missing_option(exc: MissingConfigException, files: Catalog) -> ConfigError:
    """`experiment=nope`: the group's options in full (user folders' included)."""
    missing = exc.missing_cfg_file or ""
    if "/" not in missing or exc.options is None:
        return composition_error(exc, files)
    group, name = missing.rsplit("/", 1)
    return ConfigError(
        f"{BAD}unknown {group} '{name}': known {group}s are {', '.join(sorted(exc.options)) or 'none'} "
        f"(files in {files.where(group)})"
    )


def composition_error(exc: Exception, files: Catalog) -> ConfigError:
    """One line for a Hydra/OmegaConf error; an unknown key names the known ones instead of Hydra's hint."""
    if problem := unknown_key_error(exc, files):
        return ConfigError(BAD + problem)
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first_line = "; ".join(lines[:2]) or type(exc).__name__
    # Hydra quotes the override it could not read, which may be a store URL with a secret in it.
    return ConfigError(
        redact(
            f"bad config or override ({first_line}); "
            f"check the names under {CONF_DIR} and the override syntax key=value"
        )
    )


def unknown_key_error(exc: Exception, files: Catalog, root: type = schema.Config) -> str | None:
    """The unknown key behind a composition error, with the known ones (None: some other error).

    Hydra's "Could not override 'load.maxtokens'" suggests `+load.maxtokens=...`, which
    check_keys rejects as well: say what the schema has instead.
    """
    text = re.sub(r"\[(\d+)\]", r".\1", f"{exc}\n{exc.__cause__ or ''}")
    where = re.match(r"In '([^']+)'", text)
    in_file = f" (in {where.group(1)}.yaml)" if where else ""
    override = re.search(r"(?:Could not override '|Error merging override \+*)([\w.]+)", text)
    full_key = re.search(r"full_key: (\S+)", text)
    typed = re.search(r"Key '([^']+)' not in '(\w+)'", text)
    if typed and (tp := schema_types(root).get(typed.group(2))):
        # The key itself (load.maxtokens=5), or one inside its value (cluster.nodes=[{cpu: 3}]).
        unknown = typed.group(1)
        if full_key and "." in full_key.group(1):
            path = full_key.group(1).split(".")
        elif override:
            path = override.group(1).split(".")
            path += [] if path[-1] == unknown else [unknown]
        else:
            fields_of = ", ".join(sorted(field_types(tp)))
            return f"unknown key '{unknown}': a {tp.__name__} has {fields_of}{in_file}"
        return (key_problem(path, files, root) or unknown_key(path, tp)) + in_file
    key = override or full_key
    if key and (problem := key_problem(key.group(1).split("."), files, root)):
        return problem + in_file
    return None


def schema_types(root: type) -> dict[str, type]:
    """Every dataclass reachable from `root`'s fields, by class name."""
    found: dict[str, type] = {}

    def visit(tp: Any) -> None:
        if is_dataclass(tp) and isinstance(tp, type) and tp.__name__ not in found:
            found[tp.__name__] = tp
            for sub in field_types(tp).values():
                visit(sub)
        for arg in get_args(tp):
            visit(arg)

    visit(root)
    return found


def field_types(tp: type) -> dict[str, Any]:
    """A schema dataclass's fields and types; Config's model/lever/corpus hold specs by name."""
    hints = get_type_hints(tp)
    if tp is schema.Config:
        hints |= {group: dict[str, kind] for kind, group in GROUPS.items()}
    return hints


def schema_file(tp: type) -> str:
    """Where a schema dataclass is defined, relative to the project (experiments/tune.py, not __main__)."""
    path = Path(inspect.getsourcefile(tp) or tp.__module__)
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def unknown_key(path: Iterable[str], tp: type) -> str:
    *parent, last = path
    key = ".".join([*parent, last])
    known = ", ".join(sorted(field_types(tp)))
    source = f"{schema_file(tp)}:{tp.__name__}"
    if not parent and tp is not schema.Config:
        return f"unknown key '{key}': the config's keys are {known} ({source})"
    if not parent:
        return (
            f"unknown key '{key}': the config's keys are {known}, and its groups {', '.join(CONFIG_GROUPS)} "
            "(vocab/schema.py:Config)"
        )
    if len(parent) == 2 and parent[0] in KINDS:
        return f"unknown key '{key}': a {parent[0]} has {known} ({source})"
    return f"unknown key '{key}': {'.'.join(parent)} has {known} ({source})"


def key_problem(path: list[str], files: Catalog, root: type = schema.Config) -> str | None:
    """Why the dotted key `path` is none of `root`'s, or None when it could be one."""
    spec_field = len(path) == 2 and path[0] in KINDS and path[1] in field_types(KINDS[path[0]])
    if root is schema.Config and spec_field:
        return not_a_spec(path[0], path[1], "...", files.names(path[0]))
    tp: Any = root
    for i, part in enumerate(path):
        if is_dataclass(tp):
            types = field_types(tp)
            if part not in types:
                return unknown_key(path[: i + 1], tp)
            tp = types[part]
        elif get_origin(tp) in (dict, list):
            tp = get_args(tp)[-1]
        else:
            return None
    return None


def check_keys(value: Any, tp: Any, path: tuple[str, ...] = ()) -> None:
    """Every key of the composed `value` is a field of its schema type `tp`, at every depth."""
    if is_dataclass(tp) and isinstance(value, dict):
        types = field_types(tp)
        for key, item in value.items():
            if key not in types:
                raise ConfigError(BAD + unknown_key((*path, key), tp))
            check_keys(item, types[key], (*path, key))
    elif get_origin(tp) is dict and isinstance(value, dict):
        for key, item in value.items():
            check_keys(item, get_args(tp)[1], (*path, str(key)))
    elif get_origin(tp) is list and isinstance(value, list):
        for index, item in enumerate(value):
            check_keys(item, get_args(tp)[0], (*path, str(index)))


def check_names(cfg: DictConfig, catalog: Catalog) -> None:
    """Every model, lever and corpus the config names exists; every spec it gives is valid."""
    grid = cfg.grid

    def known(group: str, names: Iterable[str], where: str) -> None:
        for name in names:
            if name not in catalog.names(group):
                if where == f"grid.{PLURAL[group]}":
                    raise catalog.unknown(group, name)
                raise ConfigError(
                    f"{where} names {group} '{name}', which does not exist: {catalog.known(group)}"
                )

    for kind, group in GROUPS.items():
        for name in cfg[group]:
            catalog.load(kind, name)
    known("model", grid.models, "grid.models")
    known("lever", grid.levers, "grid.levers")
    known("corpus", grid.corpora, "grid.corpora")
    known("lever", grid.ks, "grid.ks")
    known("corpus", grid.num_prompts, "grid.num_prompts")
    known("corpus", grid.own_engine_corpora, "grid.own_engine_corpora")
    known("model", cfg.plan.rates, "plan.rates")
    for group in ("model", "lever", "corpus"):
        if (name := grid.anchor[group]) is not None:
            known(group, [name], f"grid.anchor.{group}")


def pop_format(overrides: list[str], allowed: tuple[str, ...] = ("table", "json")) -> tuple[str, list[str]]:
    """Split a command's own `format=...` (one of `allowed`, the first the default) from the Hydra
    overrides (plan, corpus: table|json; status: table|json; summary: table|json|csv)."""
    fmt, rest = allowed[0], []
    for item in overrides:
        if item.startswith("format="):
            fmt = item.split("=", 1)[1]
        else:
            rest.append(item)
    if fmt not in allowed:
        raise ConfigError(f"format must be {', '.join(allowed[:-1])} or {allowed[-1]}, got '{fmt}'")
    return fmt, rest


# Overrides that name a grid (`experiment=final`, `grid.levers=[van]`, `+corpus.mine.path=...`): with
# none of them, `status` and `report` describe whatever the store holds, not the default experiment.
GRID_KEYS = ("experiment", "grid", "corpus", "model")


def names_a_grid(overrides: list[str]) -> bool:
    """Whether an override picks or narrows a grid (then `status`/`report` describe its cells)."""
    keys = (o.split("=", 1)[0].lstrip("+~") for o in overrides)
    return any(key.split(".", 1)[0].split("@", 1)[0] in GRID_KEYS for key in keys)

"""Every config key with one sentence, from the comments in vocab/schema.py: docs/cli.md and `--help`.

`python -m vocab.cli_reference` writes docs/cli.md; `--check` exits 1 when the file is not what the
schema gives (tests/unit/vocab/test_cli_reference.py regenerates it the same way). A key's sentence is
the first sentence of the comment above its field (a section's: its dataclass's docstring), so a key
added to the schema with a comment shows here and in each command's `--help` at once, and one added
without a comment fails the test.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
import textwrap
import typing
from dataclasses import MISSING as NO_DEFAULT
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vocab import schema

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
COMMAND = "python -m vocab.cli_reference"
# Config's dict fields whose values are whole specs, by name: `+model.<name>.tp=2`.
NAMED_SPECS = {"model": schema.ModelSpec, "lever": schema.LeverSpec, "corpus": schema.CorpusSpec}
# A sentence ends at a stop followed by a capital, a digit or a quote; not at "e.g." or "i.e.".
SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)\.\s+(?=[A-Z0-9`(\"'])")


@dataclass(frozen=True)
class Key:
    """One config key: its dotted name, type, default and sentence."""

    name: str
    type: str
    default: str
    meaning: str


@dataclass(frozen=True)
class Section:
    """A dataclass of the schema at a dotted prefix (`grid.anchor`), with its docstring's sentence."""

    name: str
    meaning: str
    keys: tuple[Key, ...]


def first_sentence(text: str) -> str:
    """The comment's first sentence, on one line, ending with a stop."""
    flat = " ".join(text.split())
    head = SENTENCE_END.split(flat, maxsplit=1)[0].rstrip(".")
    return f"{head}." if head else ""


@cache
def comments(cls: type) -> dict[str, str]:
    """Field name -> the `#` comment lines right above it in the class body, joined."""
    lines, _start = inspect.getsourcelines(cls)
    body = ast.parse(textwrap.dedent("".join(lines))).body[0]
    found = {}
    for node in getattr(body, "body", []):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#"):
                above.insert(0, lines[i].strip().lstrip("#").strip())
                i -= 1
            found[node.target.id] = " ".join(above)
    return found


def type_text(kind: Any) -> str:
    """`int`, `list[str]`, `str | None`: the annotation as written."""
    text = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
    return str(text).replace("typing.", "")


def default_text(f: dataclasses.Field) -> str:
    """The default as an override would spell it (`???`: required)."""
    if f.default is not NO_DEFAULT:
        value = f.default
    elif f.default_factory is not NO_DEFAULT:
        value = f.default_factory()
    else:
        return "???"
    if is_dataclass(value):
        return ""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return "{}" if value == {} else str(value)


def sections(cls: type = schema.Config, prefix: str = "") -> list[Section]:
    """Every section of the schema under `prefix`, depth first, with its own keys."""
    hints = typing.get_type_hints(cls)
    said = comments(cls)
    keys, nested = [], []
    for f in fields(cls):
        name = f"{prefix}{f.name}"
        kind = hints[f.name]
        if is_dataclass(kind):
            nested += sections(kind, f"{name}.")
        elif f.name in NAMED_SPECS and cls is schema.Config:
            nested += sections(NAMED_SPECS[f.name], f"{name}.<name>.")
        elif typing.get_origin(kind) is list and is_dataclass(inner := typing.get_args(kind)[0]):
            nested += sections(inner, f"{name}[i].")
        else:
            keys.append(Key(name, type_text(f.type), default_text(f), first_sentence(said.get(f.name, ""))))
    own = Section(prefix.rstrip("."), first_sentence(cls.__doc__ or ""), tuple(keys))
    return ([own] if keys else []) + nested


def section_named(name: str) -> list[Section]:
    """The sections at `name` and under it (`grid`: grid, grid.anchor, grid.confirm, ...)."""
    return [s for s in sections() if s.name == name or s.name.startswith(f"{name}.")]


def undocumented() -> list[str]:
    """Keys whose field has no comment and sections whose dataclass has no docstring."""
    missing = [k.name for s in sections() for k in s.keys if not k.meaning]
    return missing + [f"{s.name} (docstring)" for s in sections() if s.name and not s.meaning]


def help_lines(names: typing.Iterable[str], width: int = 100, only: set[str] | None = None) -> list[str]:
    """`--help`'s keys: per section its sentence, then each key with its own, wrapped to `width`;
    `only`: these dotted keys and no others of the sections."""
    lines = []
    for section in (s for name in names for s in section_named(name)):
        keys = [k for k in section.keys if only is None or k.name in only]
        if not keys:
            continue
        lines += textwrap.wrap(f"{section.name}: {section.meaning}", width, initial_indent="  ")
        pad = min(max(len(k.name) for k in keys), 34) + 2
        for key in keys:
            lines += textwrap.wrap(
                f"{key.name:<{pad}}{key.meaning}",
                width,
                initial_indent="    ",
                subsequent_indent=" " * (pad + 4),
                break_on_hyphens=False,
            )
    return lines


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """docs/cli.md: every section, then every key with its type, default and sentence."""
    out = [
        "# Config reference",
        "",
        f"Generated from the comments in `vocab/schema.py` by `{COMMAND}`; do not edit by hand",
        "(`tests/unit/vocab/test_cli_reference.py` fails when this file is stale). Every key is set",
        "on the command line as `section.key=value` (`+section.key=value` for a key the config",
        "lacks, such as `+model.<name>.tp=2`); `python -m grid <command> --help` lists the keys",
        "each command reads.",
        "",
    ]
    for section in sections():
        title = section.name or "(top level)"
        out += [f"## `{title}`", ""]
        if section.meaning:
            out += [section.meaning, ""]
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for k in section.keys:
            default = f"`{cell(k.default)}`" if k.default else ""
            out.append(f"| `{k.name}` | `{cell(k.type)}` | {default} | {cell(k.meaning)} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if missing := undocumented():
        print(f"error: no comment in vocab/schema.py for: {', '.join(missing)}", file=sys.stderr)
        return 1
    text = markdown()
    if "--check" in argv:
        if not DOC.is_file() or DOC.read_text() != text:
            print(f"{DOC} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

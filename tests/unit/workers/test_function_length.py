"""No function in workers/ is longer than a screen (issue 39): one that grows past it is split.

A function's length is its body's lines, from the first statement after the docstring to its
last line (signature, decorators and docstring left out; nested functions count in the one
that holds them), read from the source with `ast`.
"""

from __future__ import annotations

import ast

from vocab.paths import project_path

MAX_BODY_LINES = 60


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's end."""
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def long_functions(package: str, limit: int) -> dict[str, int]:
    """'path:line name' -> body lines, for every function in `package` over `limit`."""
    root = project_path(".")
    found = {}
    for path in sorted(project_path(package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and body_lines(node) > limit:
                found[f"{path.relative_to(root)}:{node.lineno} {node.name}"] = body_lines(node)
    return found


def test_no_function_in_workers_is_over_a_screen():
    assert long_functions("workers", MAX_BODY_LINES) == {}


def test_the_length_leaves_out_the_docstring_and_counts_nested_functions():
    source = 'def f():\n    """Doc\n    string."""\n    x = 1\n\n    def g():\n'
    source += "        return x\n    return g\n"
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert body_lines(node) == 5

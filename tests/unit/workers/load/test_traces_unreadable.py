"""Traces that cannot be read as rows: one error naming the file and why, never a traceback.

And ShareGPT's own form, one JSON array of rows, read as rows.
"""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import workers.load.traces as traces
from vocab.errors import ConfigError
from workers.load.prompts import read_corpus

SHAREGPT = [
    {
        "id": f"sg{i}",
        "conversations": [{"from": "human", "value": f"question {i} é"}, {"from": "gpt", "value": "a"}],
    }
    for i in range(40)
]


def test_a_binary_file_is_named_not_a_unicode_traceback(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ConfigError, match=r"trace\.jsonl is binary \(a NUL byte at byte offset 0\)"):
        read_corpus(path)


def test_a_line_that_is_not_utf8_is_a_bad_row_with_its_byte_offset(tmp_path):
    path = tmp_path / "t.jsonl"
    first = json.dumps({"prompt": "fine"}).encode() + b"\n"
    path.write_bytes(first + '{"prompt": "caf\xe9"}\n'.encode("latin-1") + b'{"prompt": "also fine"}\n')
    offset = len(first) + len('{"prompt": "caf')
    with pytest.raises(
        ConfigError, match=rf"t\.jsonl:2: bad corpus row: not UTF-8 text \(byte 0xe9 at byte offset {offset}"
    ):
        read_corpus(path)
    corpus = read_corpus(path, skip_bad_rows=True)
    assert [p.prompt for p in corpus.prompts] == ["fine", "also fine"] and corpus.skipped_rows == 1


def test_a_gzipped_trace_says_to_decompress_it(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(gzip.compress(b'{"prompt": "x"}\n'))
    with pytest.raises(ConfigError, match="gzip-compressed; decompress it"):
        read_corpus(path)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "cut_in_the_middle"])
def test_a_corrupt_parquet_trace_is_named_not_an_arrow_traceback(tmp_path, damage):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"prompt": [f"p{i}" for i in range(2000)]}), good)
    data = good.read_bytes()
    path = tmp_path / "t.parquet"
    path.write_bytes(
        {
            "garbage": b"PAR1" + b"x" * 100 + b"PAR1",
            "truncated": data[: len(data) // 2],
            "cut_in_the_middle": data[: len(data) // 2] + data[-300:],
        }[damage]
    )
    with pytest.raises(
        ConfigError, match=r"corpus file .*t\.parquet is unreadable .*replace it with a whole copy"
    ):
        read_corpus(path)


def test_a_sharegpt_json_array_is_read_as_rows(tmp_path, monkeypatch):
    as_lines = tmp_path / "sg.jsonl"
    as_lines.write_text("".join(json.dumps(r) + "\n" for r in SHAREGPT))
    array = tmp_path / "sg.json"
    array.write_text(json.dumps(SHAREGPT, indent=2, ensure_ascii=False))
    # Small chunks: elements, numbers and multi-byte characters cut at chunk boundaries.
    monkeypatch.setattr(traces, "CHUNK_BYTES", 7, raising=False)
    corpus = read_corpus(array)
    assert corpus.prompts == read_corpus(as_lines).prompts
    assert len(corpus.prompts) == 40 and corpus.prompts[3].messages[0]["content"] == "question 3 é"


def test_a_json_array_with_a_bad_element_names_the_element_as_its_row(tmp_path):
    path = tmp_path / "sg.json"
    path.write_text(json.dumps([SHAREGPT[0], {"conversations": []}, SHAREGPT[1]]))
    with pytest.raises(
        ConfigError, match=r"sg\.json:2: bad corpus row: `conversations` must be a non-empty list"
    ):
        read_corpus(path)
    assert read_corpus(path, skip_bad_rows=True).skipped_rows == 1


def test_a_broken_json_array_is_an_error_for_the_file(tmp_path):
    path = tmp_path / "sg.json"
    path.write_text(json.dumps(SHAREGPT)[:-200])
    with pytest.raises(
        ConfigError, match=r"sg\.json holds a JSON array that is broken at element \d+ .*jq -c"
    ):
        read_corpus(path, skip_bad_rows=True)


def test_a_first_row_that_is_not_json_does_not_only_suggest_skipping_rows(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("prompt,id\nhello,1\n")
    with pytest.raises(
        ConfigError, match=r"t\.jsonl:1: bad corpus row: not JSON .*no row before it could be read"
    ):
        read_corpus(path)

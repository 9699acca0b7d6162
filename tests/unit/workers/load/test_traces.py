import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vocab.errors import ConfigError
from workers.load.prompts import Prompt, read_corpus

OPENAI = {
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": "recorded answer, dropped"},
    ]
}
SHAREGPT = {"id": "sg1", "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}
PLAIN = {"prompt": "def f():"}
EXPECTED = [
    Prompt(
        "row-1", None, ({"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"})
    ),
    Prompt("sg1", None, ({"role": "user", "content": "q"},)),
    Prompt("row-3", "def f():", None),
]


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def save_to_disk(folder, table, shards=2):
    """The layout `datasets.Dataset.save_to_disk` writes: Arrow stream shards listed in state.json."""
    folder.mkdir()
    names = [f"data-{i:05d}-of-{shards:05d}.arrow" for i in range(shards)]
    step = -(-table.num_rows // shards)
    for i, name in enumerate(names):
        with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(i * step, step))
    state = {"_data_files": [{"filename": n} for n in names], "_fingerprint": "x", "_split": None}
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "dataset_info.json").write_text("{}")
    return folder


def test_jsonl_accepts_openai_sharegpt_and_plain_rows(tmp_path):
    corpus = read_corpus(write_jsonl(tmp_path / "t.jsonl", [OPENAI, SHAREGPT, PLAIN]))
    assert corpus.prompts == EXPECTED and corpus.skipped_rows == 0


def test_parquet_rows(tmp_path):
    path = tmp_path / "t.parquet"
    messages = [[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], None]
    pq.write_table(pa.table({"messages": messages, "prompt": [None, "p"]}), path)
    assert read_corpus(path).prompts == [
        Prompt("row-1", None, ({"role": "user", "content": "a"},)),
        Prompt("row-2", "p", None),
    ]


def test_hf_save_to_disk_folder_and_dataset_dict(tmp_path):
    table = pa.table({"id": [f"r{i}" for i in range(5)], "prompt": [f"p{i}" for i in range(5)]})
    folder = save_to_disk(tmp_path / "ds", table)
    assert [p.prompt for p in read_corpus(folder).prompts] == [f"p{i}" for i in range(5)]
    dataset_dict = tmp_path / "dd"
    dataset_dict.mkdir()
    save_to_disk(dataset_dict / "train", table, shards=1)
    (dataset_dict / "dataset_dict.json").write_text(json.dumps({"splits": ["train"]}))
    assert len(read_corpus(dataset_dict).prompts) == 5


def test_not_a_saved_dataset(tmp_path):
    (tmp_path / "folder").mkdir()
    with pytest.raises(ConfigError, match=r"no state\.json"):
        read_corpus(tmp_path / "folder")


BAD_ROWS = [
    ("{not json", "not JSON"),
    ({"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, "exactly one of"),
    ({"prompt": ""}, "non-empty string"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "message 0 needs a role"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "non-text content"),
    ({"messages": [{"role": "assistant", "content": "only an answer"}]}, "no user turn"),
    ({"conversations": [{"from": "human"}]}, "turn 0 needs `value`"),
    ({"id": "sg1", "prompt": "dup"}, "duplicate id 'sg1'"),
    ([1, 2], "expected an object"),
]


@pytest.mark.parametrize(("row", "reason"), BAD_ROWS)
def test_a_bad_row_names_file_row_and_reason(tmp_path, row, reason):
    path = write_jsonl(tmp_path / "t.jsonl", [SHAREGPT, "", row])
    with pytest.raises(ConfigError, match=rf"t\.jsonl:3: bad corpus row: .*{reason}.*skip_bad_rows"):
        read_corpus(path)


def test_skip_bad_rows_counts_them(tmp_path):
    rows = [SHAREGPT, *(row for row, _ in BAD_ROWS), PLAIN]
    corpus = read_corpus(write_jsonl(tmp_path / "t.jsonl", rows), skip_bad_rows=True)
    assert [p.prompt_id for p in corpus.prompts] == ["sg1", f"row-{len(rows)}"]
    assert corpus.skipped_rows == len(BAD_ROWS)
    assert corpus.skip_reasons[0].endswith(
        "t.jsonl:2: bad corpus row: not JSON (Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1))"
    )


def test_parquet_bad_row_numbers_count_from_one(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"prompt": ["ok", ""]}), path)
    with pytest.raises(ConfigError, match=r"t\.parquet:2: bad corpus row"):
        read_corpus(path)
    assert read_corpus(path, skip_bad_rows=True).skipped_rows == 1


def test_all_rows_bad_is_an_error_even_when_skipping(tmp_path):
    with pytest.raises(ConfigError, match=r"no prompts \(1 bad rows skipped\)"):
        read_corpus(write_jsonl(tmp_path / "t.jsonl", ["{"]), skip_bad_rows=True)


def test_explicit_format_and_unknown_format(tmp_path):
    path = write_jsonl(tmp_path / "trace.data", [PLAIN])
    assert read_corpus(path, format="jsonl").prompts == [Prompt("row-1", "def f():", None)]
    with pytest.raises(ConfigError, match="unknown corpus format 'csv'"):
        read_corpus(path, format="csv")

import json

import pytest

from assets import corpora
from tests.unit.assets.conftest import MODEL_DIR
from tests.unit.assets.test_corpus_chat import conversation, fake_sharegpt_file, truncated_file
from workers.prompts import load_corpus

CAP = 1984


@pytest.fixture
def small_build(counter, few_packages, tmp_path, monkeypatch):
    """Every builder, over a few packages and a five-conversation ShareGPT file."""
    records = [conversation(str(i), ("human", f"question {i}"), ("gpt", "answer")) for i in range(6)]
    path = truncated_file(tmp_path, records)
    fake_sharegpt_file(monkeypatch, path)
    monkeypatch.setattr(corpora, "MIX_PER_CORPUS", 20)

    def build(name: str, cap: int = CAP) -> dict:
        return corpora.ensure(tmp_path / name, MODEL_DIR, cap)

    return build


def test_same_inputs_build_byte_identical_corpora(small_build):
    first, second = small_build("a"), small_build("b")
    assert set(first) == {*corpora.BUILDERS, "mix"}
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name
        assert load_corpus(first[name]) == load_corpus(second[name])


def test_mix_is_a_seeded_sample_of_every_corpus(small_build):
    paths = small_build("a")
    rows = [json.loads(line) for line in paths["mix"].read_text().splitlines()]
    assert {r["corpus"] for r in rows} == set(corpora.BUILDERS)
    assert all("messages" in r for r in rows)
    assert max(sum(r["corpus"] == name for r in rows) for name in corpora.BUILDERS) <= 20
    assert [r["corpus"] for r in rows[:8]] != sorted(r["corpus"] for r in rows[:8])


def test_meta_records_cap_and_lengths_and_a_new_cap_rebuilds(small_build):
    paths = small_build("a")
    meta = json.loads(corpora.meta_path(paths["chat_bench"]).read_text())
    assert meta["prompts"] == 110 and meta["max_prompt_tokens"] == CAP
    assert meta["licenses"] == ["Apache-2.0"]
    assert meta["prompt_tokens"]["p50"] <= meta["prompt_tokens"]["p99"] <= CAP
    before = paths["code_edit"].stat().st_mtime_ns
    small_build("a")
    assert paths["code_edit"].stat().st_mtime_ns == before
    small_build("a", cap=512)
    rebuilt = json.loads(corpora.meta_path(paths["code_edit"]).read_text())
    assert rebuilt["max_prompt_tokens"] == 512 and rebuilt["prompt_tokens"]["max"] <= 512

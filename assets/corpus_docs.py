"""Document corpora from packaged docs: long documents to summarise (`summarize`) and
documentation chunks with a question answered by quoting them (`rag_qa`)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from assets.corpus_sources import DOC_PACKAGES, Source, documents
from workers.load.tokens import TokenCounter

# A summarize document is consecutive paragraphs of one file, up to this many
# characters (then trimmed to the token cap), and at least the minimum.
DOC_MAX_CHARS = 24_000
DOC_MIN_CHARS = 3_000
# A rag_qa chunk, as a retriever would return it.
CHUNK_MAX_CHARS = 1_500
CHUNK_MIN_CHARS = 300
CONTEXT_CHUNKS = 4
# A document that opens with the same characters as an earlier one (a README
# copied between two task folders) is the same document: taken once.
SAME_OPENING_CHARS = 1_000
SUMMARY_ASKS = (
    "Summarise the document below in five bullet points.",
    "Write a three-sentence summary of the document below for a busy engineer.",
    "Give a one-paragraph TL;DR of the document below.",
)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# `term` (Markdown) or ``term`` (reStructuredText): names a reader would ask about.
_TERM = re.compile(r"``?([A-Za-z_][\w.\-]{2,40}(?:\(\))?)``?")


@dataclass(frozen=True)
class Section:
    """Consecutive paragraphs of one packaged document."""

    src: Source
    path: str
    index: int
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


def sections(max_chars: int, min_chars: int) -> Iterator[Section]:
    """Every distinct doc of DOC_PACKAGES cut at paragraph breaks into pieces of min..max characters."""
    openings: set[str] = set()
    for package in DOC_PACKAGES:
        for src, path, text in documents(package):
            opening = " ".join(text.split())[:SAME_OPENING_CHARS]
            if opening in openings:
                continue
            openings.add(opening)
            paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
            current: list[str] = []
            index, size = 0, 0
            for paragraph in paragraphs:
                if current and size + len(paragraph) > max_chars:
                    if size >= min_chars:
                        yield Section(src, path, index, tuple(current))
                        index += 1
                    current, size = [], 0
                current.append(paragraph[:max_chars])
                size += len(paragraph[:max_chars])
            if size >= min_chars:
                yield Section(src, path, index, tuple(current))


def summarize_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """One prompt per long section: an ask for a short summary, then the section.

    Sections over the cap lose trailing paragraphs until they fit, so long
    documents stay as long as the engine allows.
    """
    for section in sections(DOC_MAX_CHARS, DOC_MIN_CHARS):
        ask = random.Random(f"summarize:{section.src.package}/{section.path}#{section.index}").choice(
            SUMMARY_ASKS
        )
        paragraphs = list(section.paragraphs)
        while paragraphs:
            messages = [{"role": "user", "content": _summary_prompt(ask, paragraphs)}]
            tokens = counter.chat(messages)
            if tokens <= max_prompt_tokens:
                break
            # Drop roughly the overshoot's share of paragraphs at once, at least one.
            keep = int(len(paragraphs) * max_prompt_tokens / tokens)
            paragraphs = paragraphs[: min(keep, len(paragraphs) - 1)]
        if sum(len(p) for p in paragraphs) >= DOC_MIN_CHARS:
            yield _row("summarize", section, messages, tokens)


def _summary_prompt(ask: str, paragraphs: list[str]) -> str:
    return f"{ask}\n\n<document>\n" + "\n\n".join(paragraphs) + "\n</document>"


def rag_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """One prompt per chunk that names a term no neighbouring chunk names.

    The context is the chunk and its neighbours in the same document (as a
    retriever returns related passages), in document order; the question asks
    about the term, and the answer must quote the one chunk that has it.
    """
    by_doc: dict[tuple[str, str], list[Section]] = {}
    for chunk in sections(CHUNK_MAX_CHARS, CHUNK_MIN_CHARS):
        by_doc.setdefault((chunk.src.package, chunk.path), []).append(chunk)
    for chunks in by_doc.values():
        for position, target in enumerate(chunks):
            start = max(0, min(position - 1, len(chunks) - CONTEXT_CHUNKS))
            context = chunks[start : start + CONTEXT_CHUNKS]
            term = _unique_term(target, [c for c in context if c is not target])
            if term is None:
                continue
            row = _fit_rag(counter, max_prompt_tokens, target, context, term)
            if row is not None:
                yield row


def _unique_term(target: Section, others: list[Section]) -> str | None:
    """The first term of `target` that no other context chunk mentions."""
    other_text = "\n".join(o.text for o in others)
    for match in _TERM.finditer(target.text):
        if match.group(1) not in other_text:
            return match.group(1)
    return None


def _fit_rag(
    counter: TokenCounter, max_tokens: int, target: Section, context: list[Section], term: str
) -> dict[str, Any] | None:
    """The prompt with as many context chunks as fit, dropping the farthest from the target first."""
    context = list(context)
    while True:
        passages = "\n\n".join(f"[{i + 1}] {c.text}" for i, c in enumerate(context))
        question = (
            f"What does the documentation say about `{term}`? Answer in one or two sentences, "
            "then quote the exact sentence from the context that supports your answer."
        )
        system = "Answer only from the numbered context passages. Quote them exactly when asked."
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Context:\n{passages}\n\nQuestion: {question}"},
        ]
        tokens = counter.chat(messages)
        if tokens <= max_tokens:
            return _row("rag_qa", target, messages, tokens)
        if len(context) == 1:
            return None
        farthest = max(context, key=lambda c: abs(c.index - target.index))
        context.remove(farthest)


def _row(corpus: str, section: Section, messages: list[dict[str, str]], tokens: int) -> dict[str, Any]:
    return {
        "id": f"{corpus}-{section.src.package}/{section.path}#{section.index}",
        "messages": messages,
        "prompt_tokens": tokens,
        "source": section.src.label(section.path),
        "license": section.src.license,
    }

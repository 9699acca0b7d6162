"""Before launch: does every prompt a cell sends fit its engine's context with load.max_tokens?

vLLM rejects a request whose prompt tokens plus max_tokens exceed max_model_len,
so a cell sent such a prompt measures an error. Per corpus (and tokenizer),
this counts the prompts that do not fit, the longest of them, and how many a
cell would send (warm-up and measured prompts, as grid/checks/prompt_audit.py replays
them); `run` stops on those the cells would send, `plan` shows the counts.

Tokens are counted with the model's own tokenizer where it is on this machine
(the folder in the model file's `tokenizer` or `path`, or the engines' Hugging
Face cache <cache_dir>/hf), as the engine counts them: the chat template
rendered for chat corpora, special tokens added for completions. A token is at
least one byte, so only prompts with more UTF-8 bytes than the room left are
tokenised; a built corpus whose meta file records its token counts under the
same tokenizer is not tokenised at all. Without a local tokenizer the count is
an estimate, UTF-8 bytes / 4 plus 4 tokens per chat message, and every line
that uses it says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vocab.schema import ModelSpec
from workers.load.prompts import Corpus, Prompt

BYTES_PER_TOKEN_ESTIMATE = 4
TOKENS_PER_MESSAGE_ESTIMATE = 4
ESTIMATE = "estimate"


def local_tokenizer(model: ModelSpec, models_dir: Path, cache_dir: Path) -> Path | None:
    """The folder holding the tokenizer.json the engine loads for `model` on this machine, or None.

    The model file's `tokenizer` when it names one (the engine is given that), else its `path`.
    """
    value = model.tokenizer or model.path
    path = Path(value.replace("{models_dir}", str(models_dir))).expanduser()
    if (path / "tokenizer.json").is_file():
        return path
    return hub_snapshot(value, cache_dir, "tokenizer.json")


def hub_snapshot(value: str, cache_dir: Path, needs: str) -> Path | None:
    """The snapshot folder of hub id `value` in the engines' cache (<cache_dir>/hf/hub) holding `needs`."""
    if not is_hub_id(value):
        return None
    repo = cache_dir / "hf" / "hub" / ("models--" + value.replace("/", "--"))
    try:
        main = repo / "snapshots" / (repo / "refs" / "main").read_text().strip()
    except OSError:
        main = None
    if main is not None and (main / needs).is_file():
        return main
    found = sorted(p.parent for p in (repo / "snapshots").glob(f"*/{needs}"))
    return found[-1] if found else None


def is_hub_id(value: str) -> bool:
    """`org/name` (or `name`): not a path on this machine, not a `{models_dir}` path."""
    return (
        "{models_dir}" not in value
        and not value.startswith(("/", "~", "."))
        and value.count("/") <= 1
        and not Path(value).exists()
    )


@dataclass(frozen=True)
class Fit:
    """Prompts of one corpus that do not fit one engine context, under one tokenizer."""

    corpus: str
    path: str
    models: tuple[str, ...]
    max_model_len: int
    max_tokens: int
    prompts: int
    too_long: int
    # Of those, how many a cell would send (warm-up or measured).
    sent_too_long: int
    longest_id: str | None
    longest_tokens: int
    # How tokens were counted: the tokenizer folder, or the estimate and why.
    counted_with: str
    exact: bool

    @property
    def room(self) -> int:
        return self.max_model_len - self.max_tokens

    def problem(self) -> str | None:
        """The one line that stops a run, when a cell would send a prompt that cannot fit."""
        if not self.sent_too_long:
            return None
        models = ", ".join(f"'{m}'" for m in self.models[:3]) + (
            f" and {len(self.models) - 3} more" if len(self.models) > 3 else ""
        )
        tokens = f"{self.longest_tokens:,} tokens" if self.exact else f"about {self.longest_tokens:,} tokens"
        fixes = [f"raise engine.max_model_len to {self.longest_tokens + self.max_tokens:,}"]
        if self.max_model_len - self.longest_tokens >= 1:
            fixes.append(f"lower load.max_tokens to {self.max_model_len - self.longest_tokens:,}")
        fixes.append(f"filter the trace to prompts of at most {max(self.room, 0):,} tokens")
        return (
            f"corpus '{self.corpus}' ({self.path}): {self.too_long:,} of {self.prompts:,} prompts do not "
            f"fit model {models} (prompt tokens + load.max_tokens {self.max_tokens:,} > engine.max_model_len "
            f"{self.max_model_len:,}), {self.sent_too_long:,} of them sent by its cells; the longest, "
            f"'{self.longest_id}', has {tokens} ({self.counted_with}); "
            + ", ".join(fixes[:-1])
            + f" or {fixes[-1]}"
        )

    def row(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "models": list(self.models),
            "max_model_len": self.max_model_len,
            "max_tokens": self.max_tokens,
            "prompts": self.prompts,
            "too_long": self.too_long,
            "sent_too_long": self.sent_too_long,
            "longest_id": self.longest_id,
            "longest_tokens": self.longest_tokens,
            "counted_with": self.counted_with,
            "exact": self.exact,
        }


def prompt_text(prompt: Prompt) -> str:
    """What a completions request sends (as workers/load/client.py: prompt_text)."""
    if prompt.prompt is not None:
        return prompt.prompt
    return "\n\n".join(m["content"] for m in prompt.messages or ())


def chat_messages(prompt: Prompt) -> list[dict[str, str]]:
    """What a chat request sends (as workers/load/client.py: request_body)."""
    return list(prompt.messages or [{"role": "user", "content": prompt.prompt or ""}])


def estimate_tokens(prompt: Prompt, endpoint: str) -> int:
    """Tokens without a tokenizer: UTF-8 bytes / 4, plus 4 per message of a chat prompt."""
    if endpoint == "chat":
        messages = chat_messages(prompt)
        size = sum(len(m["content"].encode()) for m in messages)
        return -(-size // BYTES_PER_TOKEN_ESTIMATE) + TOKENS_PER_MESSAGE_ESTIMATE * len(messages)
    return -(-len(prompt_text(prompt).encode()) // BYTES_PER_TOKEN_ESTIMATE)


class Counter:
    """Prompt tokens under one local tokenizer folder, as the engine counts them."""

    def __init__(self, folder: Path) -> None:
        from workers.load.tokens import TokenCounter  # tokenizers, only when counting

        self.folder = folder
        self.tokens = TokenCounter(folder)

    def over(self, prompts: list[Prompt], endpoint: str, room: int) -> dict[int, int]:
        """Index -> tokens of the prompts with more than `room` tokens."""
        if endpoint == "chat":
            texts = [self.tokens.render(chat_messages(p)) for p in prompts]
            extra = 0  # the template carries the specials (as TokenCounter.chat)
        else:
            texts = [prompt_text(p) for p in prompts]
            extra = self.tokens.text("", specials=True)
        # A token is at least one byte: prompts with no more bytes than the room fit.
        candidates = [i for i, t in enumerate(texts) if len(t.encode()) + extra > room]
        counts = self.tokens.texts([texts[i] for i in candidates]) if candidates else []
        return {i: n + extra for i, n in zip(candidates, counts, strict=True) if n + extra > room}


def recorded_max(corpus_path: Path, folder: Path, rows: int) -> int | None:
    """The longest prompt a built corpus's meta file records, when counted with this tokenizer folder."""
    meta_file = corpus_path.with_suffix(".meta.json")
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, ValueError):
        return None
    if meta.get("tokenizer") != folder.name or meta.get("prompts") != rows:
        return None
    value = (meta.get("prompt_tokens") or {}).get("max")
    return value if isinstance(value, int) else None


def corpus_fit(
    corpus_name: str,
    corpus_path: Path,
    corpus: Corpus,
    endpoint: str,
    models: tuple[str, ...],
    max_model_len: int,
    max_tokens: int,
    sent: set[str],
    counter: Counter | None,
    why_estimate: str,
) -> Fit:
    """One corpus against one engine context under one tokenizer (or the estimate)."""
    room = max_model_len - max_tokens
    prompts = corpus.prompts
    over: dict[int, int] | None = None
    counted_with = f"estimated at {BYTES_PER_TOKEN_ESTIMATE} bytes a token: {why_estimate}"
    if counter is not None:
        recorded = recorded_max(corpus_path, counter.folder, len(prompts))
        try:
            over = {} if recorded is not None and recorded <= room else counter.over(prompts, endpoint, room)
            counted_with = f"counted with the tokenizer in {counter.folder}"
        except Exception as exc:  # e.g. a chat template that cannot render these messages
            counted_with += f"; the tokenizer in {counter.folder} failed ({type(exc).__name__})"
    exact = over is not None
    if over is None:
        over = {i: n for i, p in enumerate(prompts) if (n := estimate_tokens(p, endpoint)) > room}
    longest = max(over, key=lambda i: over[i], default=None)
    return Fit(
        corpus=corpus_name,
        path=str(corpus_path),
        models=models,
        max_model_len=max_model_len,
        max_tokens=max_tokens,
        prompts=len(prompts),
        too_long=len(over),
        sent_too_long=sum(prompts[i].content_hash in sent for i in over),
        longest_id=prompts[longest].prompt_id if longest is not None else None,
        longest_tokens=over[longest] if longest is not None else 0,
        counted_with=counted_with,
        exact=exact,
    )


@dataclass(frozen=True)
class FitJob:
    """One corpus source sent to one model's engines with one room: what `fits` measures."""

    corpus_name: str
    corpus_path: Path
    corpus: Corpus
    endpoint: str
    model: ModelSpec
    max_model_len: int
    max_tokens: int
    sent: frozenset[str]


def fits(jobs: Iterable[FitJob], tokenizer_of: Callable[[ModelSpec], Path | None]) -> list[Fit]:
    """Fits per corpus, context and tokenizer: models sharing a tokenizer folder share a line."""
    merged: dict[tuple[Any, ...], tuple[FitJob, list[str], set[str]]] = {}
    folders: dict[str, Path | None] = {}
    for job in jobs:
        folder = folders.setdefault(job.model.name, tokenizer_of(job.model))
        key = (str(job.corpus_path), job.endpoint, job.max_model_len, job.max_tokens, str(folder or ESTIMATE))
        entry = merged.setdefault(key, (job, [], set()))
        if job.model.name not in entry[1]:
            entry[1].append(job.model.name)
        entry[2].update(job.sent)
    counters: dict[Path, Counter | None] = {}
    out = []
    for (_, _, _, _, folder_key), (job, models, sent) in merged.items():
        counter = None
        if folder_key != ESTIMATE:
            folder = Path(folder_key)
            if folder not in counters:
                try:
                    counters[folder] = Counter(folder)
                except Exception:  # an unreadable tokenizer folder: estimate instead
                    counters[folder] = None
            counter = counters[folder]
        why = (
            f"no tokenizer for model {', '.join(repr(m) for m in models)} on this machine; "
            "point its `tokenizer` at a local folder for exact counts"
        )
        out.append(
            corpus_fit(
                job.corpus_name,
                job.corpus_path,
                job.corpus,
                job.endpoint,
                tuple(models),
                job.max_model_len,
                job.max_tokens,
                sent,
                counter,
                why,
            )
        )
    return out

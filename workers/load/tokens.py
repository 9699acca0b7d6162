"""Count prompt tokens with the served model's own tokenizer, so corpora can be capped to fit.

assets/corpora.py caps the corpora it builds with it; grid/checks/prompt_fit.py checks, before a launch,
that every prompt a cell sends fits its engine's context.

The engine rejects a request whose prompt plus max_tokens exceeds max_model_len,
so each corpus is built to `max_prompt_tokens = max_model_len - max_tokens`.
Chat prompts are counted as the engine sees them: the model's chat template
rendered (with the generation prompt), then tokenised without extra specials.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from vocab.errors import ConfigError

Messages = Sequence[dict[str, str]]


class TokenCounter:
    """Token counts under one model's tokenizer.json and chat template (no transformers import)."""

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = model_dir
        if not (model_dir / "tokenizer.json").is_file():
            raise ConfigError(f"no tokenizer.json in {model_dir}; run `make assets` to prepare the model")
        self._overheads: dict[tuple[str, ...], int] = {}

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer  # import only when counting

        return Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))

    @cached_property
    def _template(self) -> Any:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        path = self.model_dir / "chat_template.jinja"
        if path.is_file():
            source = path.read_text()
        else:
            source = json.loads((self.model_dir / "tokenizer_config.json").read_text())["chat_template"]
        # The environment Hugging Face uses to render chat templates.
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(source)

    def text(self, text: str, specials: bool = True) -> int:
        """Tokens of a raw prompt (completions endpoint adds the tokenizer's special tokens)."""
        return len(self._tokenizer.encode(text, add_special_tokens=specials).ids)

    def texts(self, texts: list[str]) -> list[int]:
        """Tokens of each text, without specials; batched across cores."""
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def render(self, messages: Messages) -> str:
        """The chat template applied to `messages`, ending with the assistant's turn opening."""
        return str(self._template.render(messages=list(messages), add_generation_prompt=True))

    def chat(self, messages: Messages) -> int:
        """Exact prompt tokens of a chat request."""
        return self.text(self.render(messages), specials=False)

    def chat_overhead(self, roles: tuple[str, ...]) -> int:
        """Template tokens around the contents for this sequence of roles (contents excluded)."""
        if roles not in self._overheads:
            self._overheads[roles] = self.chat([{"role": role, "content": ""} for role in roles])
        return self._overheads[roles]


def percentiles(values: list[int], qs: tuple[int, ...] = (50, 90, 99)) -> dict[str, int]:
    """Nearest-rank percentiles (p = the smallest value with at least p% of values at or below it)."""
    if not values:
        return {f"p{q}": 0 for q in qs}
    ordered = sorted(values)
    return {f"p{q}": ordered[max(0, -(-q * len(ordered) // 100) - 1)] for q in qs}

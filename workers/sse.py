"""Server-sent events of OpenAI-style streaming responses, decoded after the stream ends.

The client keeps only (perf-counter ns, raw line) while streaming; JSON decoding
happens here, off the hot path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DONE = b"[DONE]"


@dataclass
class StreamResult:
    """What one streamed response said, decoded from its raw lines."""

    # perf_counter_ns of each chunk that carried output text (usage-only and
    # [DONE] lines excluded); one chunk may carry several tokens.
    content_chunk_ns: list[int]
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    text: str
    saw_done: bool
    error_message: str | None = None
    # Tokens per content chunk from the server's `token_ids` (vLLM's
    # return_token_ids); None when the server does not send them.
    chunk_tokens: list[int] | None = None


def data_payload(line: bytes) -> bytes | None:
    """The payload of an SSE `data:` line; None for blank lines, comments and other fields."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    return line[5:].strip()


def choice_text(choice: dict[str, Any]) -> str:
    """Text of one streamed choice: completions put it in `text`, chat in `delta.content`."""
    if "text" in choice:
        return choice.get("text") or ""
    delta = choice.get("delta") or {}
    return (delta.get("content") or "") + (delta.get("reasoning_content") or "")


def decode_stream(lines: list[tuple[int, bytes]]) -> StreamResult:
    """Decode (timestamp_ns, raw line) pairs of one response."""
    result = StreamResult([], None, None, None, "", saw_done=False)
    pieces: list[str] = []
    counts: list[int] = []
    counted_all = True
    for t_ns, line in lines:
        payload = data_payload(line)
        if payload is None or not payload:
            continue
        if payload == DONE:
            result.saw_done = True
            continue
        event = json.loads(payload)
        if "error" in event:
            error = event["error"]
            result.error_message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            continue
        if usage := event.get("usage"):
            result.prompt_tokens = usage.get("prompt_tokens")
            result.completion_tokens = usage.get("completion_tokens")
        for choice in event.get("choices") or []:
            text = choice_text(choice)
            token_ids = choice.get("token_ids")
            if text or token_ids:
                pieces.append(text)
                result.content_chunk_ns.append(t_ns)
                counts.append(len(token_ids or ()))
                counted_all = counted_all and token_ids is not None
            if choice.get("finish_reason"):
                result.finish_reason = choice["finish_reason"]
    result.text = "".join(pieces)
    if counted_all and counts:
        result.chunk_tokens = counts
    return result

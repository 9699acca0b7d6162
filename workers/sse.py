"""Server-sent events of OpenAI-style streaming responses, decoded after the stream ends.

The client keeps only (perf-counter ns, raw line) while streaming; JSON decoding
happens here, off the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

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


def split_reads(reads: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Lines from raw network reads, each stamped with the read that completed it.

    The client stamps each read, not each line: events that arrived in one read
    were seen by the client at the same instant, and a line split across two
    reads was only complete at the second.
    """
    lines: list[tuple[int, bytes]] = []
    pending = b""
    for t_ns, blob in reads:
        parts = (pending + blob).split(b"\n")
        pending = parts.pop()
        lines.extend((t_ns, part) for part in parts if part)
    if pending:
        lines.append((reads[-1][0], pending))
    return lines


def data_payload(line: bytes) -> bytes | None:
    """The payload of an SSE `data:` line; None for blank lines, comments and other fields."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    return line[5:].strip()


class Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None


class Choice(msgspec.Struct):
    text: str | None = None  # completions
    delta: Delta | None = None  # chat
    token_ids: list[int] | None = None
    finish_reason: str | None = None


class Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Event(msgspec.Struct):
    """One streamed chunk, only the fields the harness reads (others are skipped unparsed)."""

    choices: list[Choice] | None = None
    usage: Usage | None = None
    error: Any = None


EVENT = msgspec.json.Decoder(Event)


def choice_text(choice: Choice) -> str:
    """Text of one streamed choice: completions put it in `text`, chat in `delta.content`."""
    if choice.text is not None:
        return choice.text
    if choice.delta is None:
        return ""
    return (choice.delta.content or "") + (choice.delta.reasoning_content or "")


def error_message(error: Any) -> str:
    return str(error.get("message", error)) if isinstance(error, dict) else str(error)


def decode_stream(lines: list[tuple[int, bytes]]) -> StreamResult:
    """Decode (timestamp_ns, raw line) pairs of one response (see split_reads for raw reads).

    Raises ValueError on a line that is not valid JSON of the expected shape.
    """
    result = StreamResult([], None, None, None, "", saw_done=False)
    pieces: list[str] = []
    counts: list[int] = []
    counted_all = True
    for t_ns, line in lines:
        payload = data_payload(line)
        if not payload:
            continue
        if payload == DONE:
            result.saw_done = True
            continue
        try:
            event = EVENT.decode(payload)
        except msgspec.DecodeError as exc:
            raise ValueError(f"bad SSE event: {exc}") from exc
        if event.error is not None:
            result.error_message = error_message(event.error)
            continue
        if event.usage is not None:
            result.prompt_tokens = event.usage.prompt_tokens
            result.completion_tokens = event.usage.completion_tokens
        for choice in event.choices or ():
            text = choice_text(choice)
            if text or choice.token_ids:
                pieces.append(text)
                result.content_chunk_ns.append(t_ns)
                counts.append(len(choice.token_ids or ()))
                counted_all = counted_all and choice.token_ids is not None
            if choice.finish_reason:
                result.finish_reason = choice.finish_reason
    result.text = "".join(pieces)
    if counted_all and counts:
        result.chunk_tokens = counts
    return result

"""Server-sent events of OpenAI-style streaming responses, decoded after the stream ends.

The client keeps only the raw bytes and a perf-counter stamp per socket read
while streaming; JSON decoding happens here, off the hot path, once per
response. Per-chunk results are arrays of machine integers (8 bytes per chunk
stamp, 4 per token count), never a Python object per chunk.
"""

from __future__ import annotations

import gc
from array import array
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, is_, itemgetter, or_
from typing import Any

import msgspec

from workers.load.http1 import Response

DONE = b"[DONE]"


@dataclass
class StreamResult:
    """What one streamed response said, decoded from its raw lines."""

    # perf_counter_ns of each chunk that carried output text (usage-only and
    # [DONE] lines excluded); one chunk may carry several tokens.
    content_chunk_ns: array = field(default_factory=lambda: array("q"))
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    text: str = ""
    saw_done: bool = False
    error_message: str | None = None
    # Tokens per content chunk from the server's `token_ids` (vLLM's
    # return_token_ids); None when the server does not send them.
    chunk_tokens: array | None = None


def data_payload(line: bytes) -> bytes | None:
    """The payload of an SSE `data:` line; None for blank lines, comments and other fields."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    return line[5:].strip()


class Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None


class Choice(msgspec.Struct, gc=False):
    text: str | None = None  # completions
    delta: Delta | None = None  # chat
    token_ids: list[int] | None = None
    finish_reason: str | None = None


class Usage(msgspec.Struct, gc=False):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


# gc=False: these structs hold no cycles, and untracked objects make decoding
# about three times faster (measured: 1.8 -> 0.55 µs per vLLM event).
class Event(msgspec.Struct, gc=False):
    """One streamed chunk, only the fields the harness reads (others are skipped unparsed)."""

    choices: list[Choice] | None = None
    usage: Usage | None = None
    error: Any = None


EVENTS = msgspec.json.Decoder(list[Event])
EVENT = msgspec.json.Decoder(Event)


def error_message(error: Any) -> str:
    return str(error.get("message", error)) if isinstance(error, dict) else str(error)


DONE_EVENT = b"data: [DONE]\n\n"
EVENT_SEP = b"\n\ndata: "


def decode_response(response: Response) -> StreamResult:
    """Decode a streamed response; events are stamped with the socket read that completed them."""
    # Decoding makes two lists per event (choices, token_ids): with the
    # collector on, each response's thousands of them would be promoted to the
    # oldest generation and set off full collections over the whole heap (every
    # module the harness imported). They hold no cycles and are all freed
    # before this returns, so the collector is off while they exist.
    enabled = gc.isenabled()
    gc.disable()
    try:
        fast = _fast_events(response)
        if fast is not None:
            stamps, lines, saw_done = fast
            try:
                events = EVENT.decode_lines(lines)
            except msgspec.DecodeError:
                pass  # not the shape the fast path assumes: the line-by-line path decides
            else:
                return _from_events(stamps, events, saw_done)
        return decode_stream(response.body_lines())
    finally:
        if enabled:
            gc.enable()


def _fast_events(response: Response) -> tuple[array, memoryview, bool] | None:
    """(stamps, the events as JSON lines, saw [DONE]) in C calls only, for the common shape of a stream.

    That shape is what vLLM sends: every event one `data: <json>` line followed
    by a blank line. The hot path counted the "\n\n" each read completed; they
    must add up to the body's events (chunk framing never contains "\n\n"),
    or the general line-by-line path is taken. The JSON lines are the body
    with each "\n\ndata: " turned into "\n" (JSON text never holds a raw
    newline, so only event boundaries match): one copy, no object per event.
    """
    body = response.body
    if not (body.startswith(b"data: ") and body.endswith(b"\n\n")):
        return None
    n_newlines = body.count(b"\n")  # each event brings two, or this is not the shape
    n_events = n_newlines // 2
    if n_newlines % 2 or sum(response.reads.events) != n_events:
        return None
    joined = body.replace(EVENT_SEP, b"\n")
    # n-1 separators found: with 2n newlines in all, every event is one "data: " line.
    if len(body) - len(joined) != (len(EVENT_SEP) - 1) * (n_events - 1):
        return None
    stamps = response.reads.event_stamps()
    saw_done = body.endswith(DONE_EVENT)
    end = len(joined)
    if saw_done:
        end -= len(DONE_EVENT) - len(b"data: ")  # "[DONE]\n\n"
        del stamps[-1]
    return stamps, memoryview(joined)[6:end], saw_done


def decode_stream(lines: list[tuple[int, bytes]]) -> StreamResult:
    """Decode (timestamp_ns, raw line) pairs of one response, line by line (any SSE shape).

    Raises ValueError on a line that is not valid JSON of the expected shape.
    """
    stamps = array("q")
    payloads: list[bytes] = []
    for t_ns, line in lines:
        payload = data_payload(line)
        if payload:
            stamps.append(t_ns)
            payloads.append(payload)
    saw_done = False
    if DONE in payloads:
        saw_done = True
        keep = [i for i, payload in enumerate(payloads) if payload != DONE]
        stamps, payloads = array("q", [stamps[i] for i in keep]), [payloads[i] for i in keep]
    try:
        # One decoder call for the whole response: far cheaper than one per event.
        events = EVENTS.decode(b"[" + b",".join(payloads) + b"]")
    except msgspec.DecodeError as exc:
        raise ValueError(f"bad SSE event: {exc}") from exc
    return _from_events(stamps, events, saw_done)


_choices, _usage, _error = attrgetter("choices"), attrgetter("usage"), attrgetter("error")
_text, _delta, _ids, _finish = (
    attrgetter("text"),
    attrgetter("delta"),
    attrgetter("token_ids"),
    attrgetter("finish_reason"),
)
_content, _reasoning, _first = attrgetter("content"), attrgetter("reasoning_content"), itemgetter(0)


def _from_events(stamps: array, events: list[Event], saw_done: bool) -> StreamResult:
    """The result of decoded events in arrival order (`stamps[i]` is event i's arrival)."""
    result = _from_events_fast(stamps, events)
    if result is None:
        result = _from_events_general(stamps, events)
    result.saw_done = saw_done
    return result


def _from_events_fast(stamps: array, events: list[Event]) -> StreamResult | None:
    """vLLM's usual stream in C-level passes (map, compress, join), no Python loop per event.

    The shape: one choice per event, no error, usage only in a last event
    without choices; token ids in every event or in none. Anything else: None,
    and the general loop decides.
    """
    result = StreamResult()
    if events and not events[-1].choices:
        last = events[-1]
        if last.error is not None or last.usage is None:
            return None
        result.prompt_tokens, result.completion_tokens = (
            last.usage.prompt_tokens,
            last.usage.completion_tokens,
        )
        events = events[:-1]
    if not events:
        return result
    try:
        if set(map(len, map(_choices, events))) != {1}:
            return None
    except TypeError:  # choices: null
        return None
    if not all(map(is_, map(_usage, events), _nones(events))) or not all(
        map(is_, map(_error, events), _nones(events))
    ):
        return None
    choices = list(map(_first, map(_choices, events)))
    texts = list(map(_text, choices))
    if None in texts:  # chat: the text is in each delta
        deltas = list(map(_delta, choices))
        if None in deltas or not all(map(is_, map(_reasoning, deltas), _nones(deltas))):
            return None
        texts = list(map(_content, deltas))
        if None in texts:
            texts = [text or "" for text in texts]
    ids = list(map(_ids, choices))
    counts: list[int] | None = None
    if ids.count(None) == len(ids):
        keep: list[bool] | None = None if "" not in texts else list(map(bool, texts))
    elif None in ids:
        return None
    else:
        counts = list(map(len, ids))
        keep = (
            None
            if "" not in texts and 0 not in counts
            else list(map(or_, map(bool, texts), map(bool, counts)))
        )
    result.text = "".join(texts)
    finishes = list(filter(None, map(_finish, choices)))
    result.finish_reason = finishes[-1] if finishes else None
    if keep is None:
        result.content_chunk_ns = stamps[: len(events)]
        result.chunk_tokens = None if counts is None else array("i", counts)
    else:
        result.content_chunk_ns = array("q", compress(stamps, keep))
        result.chunk_tokens = None if counts is None else array("i", compress(counts, keep))
    return result


def _nones(items: list[Any]) -> list[None]:
    return [None] * len(items)


def _from_events_general(stamps: array, events: list[Event]) -> StreamResult:
    """Any stream: one Python pass over the events."""
    result = StreamResult()
    pieces: list[str] = []
    counts: list[int] = []  # -1 where the server sent no token ids
    add_piece, add_count, add_ns = pieces.append, counts.append, result.content_chunk_ns.append
    for t_ns, event in zip(stamps, events, strict=True):
        if event.error is not None:
            result.error_message = error_message(event.error)
            continue
        if event.usage is not None:
            result.prompt_tokens = event.usage.prompt_tokens
            result.completion_tokens = event.usage.completion_tokens
        for choice in event.choices or ():
            text = choice.text
            if text is None:
                delta = choice.delta
                text = "" if delta is None else (delta.content or "") + (delta.reasoning_content or "")
            ids = choice.token_ids
            if text or ids:
                add_piece(text)
                add_ns(t_ns)
                add_count(-1 if ids is None else len(ids))
            if choice.finish_reason:
                result.finish_reason = choice.finish_reason
    result.text = "".join(pieces)
    if counts and min(counts) >= 0:
        result.chunk_tokens = array("i", counts)
    return result

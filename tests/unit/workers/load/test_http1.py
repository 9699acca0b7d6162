import gc
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.load.http1 import MalformedResponse, parse_response
from workers.load.sse import decode_response, decode_stream


def event(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunked(*pieces: bytes, head: bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") -> bytes:
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


EVENTS = [
    event({"choices": [{"index": 0, "text": "def", "token_ids": [1, 2]}]}),
    event({"choices": [{"index": 0, "text": " f():", "token_ids": [3], "finish_reason": "length"}]}),
    event({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3}}),
    b"data: [DONE]\n\n",
]


def split_at(raw: bytes, cuts: list[int]) -> list[tuple[int, bytes]]:
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(raw))), len(raw)]
    return [(10 * (i + 1), raw[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds))]


def test_chunked_body_is_deframed_and_headers_read():
    response = parse_response(
        [
            (
                1,
                chunked(
                    *EVENTS,
                    head=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                ),
            )
        ]
    )
    assert response.status == 200
    assert response.body == b"".join(EVENTS)
    assert response.keep_alive is False


def test_content_length_body_and_error_status():
    body = b'{"error": "no such model"}'
    raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    response = parse_response([(1, raw[:30]), (2, raw[30:])])
    assert (response.status, response.body, response.keep_alive) == (404, body, True)


def test_lines_take_the_stamp_of_the_read_that_completed_them():
    raw = chunked(b'data: {"a": 1}\n\n', b'data: {"b": 2}\n\n')
    cut = raw.index(b'{"b"') + 3  # second event split across two reads
    response = parse_response([(10, raw[:cut]), (20, raw[cut:])])
    assert response.body_lines() == [(10, b'data: {"a": 1}'), (20, b'data: {"b": 2}')]


def test_chunk_extensions_and_crlf_inside_data_take_the_exact_path():
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\na\r\nbc\r\n0\r\n\r\n"
    assert parse_response([(1, raw)]).body == b"a\r\nbc"


@pytest.mark.parametrize(
    "raw, reason",
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", "header"),
        (b"SMTP 200 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc\r\n", "chunk"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "Content-Length"),
    ],
)
def test_malformed_responses_say_what_is_wrong(raw, reason):
    with pytest.raises(MalformedResponse, match=reason):
        parse_response([(1, raw)])


def test_a_truncated_body_is_kept_when_the_request_failed_midway():
    raw = chunked(*EVENTS)[:-40]
    response = parse_response([(1, raw)], complete=False)
    assert response.body.startswith(EVENTS[0])


@settings(max_examples=200, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=600), max_size=12))
def test_fast_event_path_equals_the_line_by_line_path_for_any_read_boundaries(cuts):
    response = parse_response(split_at(chunked(*EVENTS), cuts))
    fast = decode_response(response)
    slow = decode_stream(response.body_lines())
    assert fast == slow
    assert fast.text == "def f():" and list(fast.chunk_tokens) == [2, 1] and fast.saw_done
    assert len(fast.content_chunk_ns) == 2


def test_events_spread_over_odd_chunks_still_decode():
    # One event split over two chunks, two events in one chunk: not vLLM's shape, still right.
    body = b"".join(EVENTS)
    raw = chunked(body[:7], body[7:200], body[200:])
    result = decode_response(parse_response([(1, raw)]))
    assert result.text == "def f():" and result.completion_tokens == 3


def long_stream(n: int) -> list[tuple[int, bytes]]:
    """A vLLM-shaped response of n one-token events, one socket read per HTTP chunk."""
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    tail = [EVENTS[2], EVENTS[3]]
    pieces = [event({"choices": [{"index": 0, "text": "t", "token_ids": [i]}]}) for i in range(n)] + tail
    reads = [head] + [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]
    return [(i + 1, r) for i, r in enumerate(reads)]


@pytest.mark.parametrize("enabled", [True, False])
def test_decoding_a_long_stream_sets_off_no_garbage_collection(enabled):
    # Each event decodes into lists (choices, token_ids); with the collector on,
    # a long response promoted thousands of them and set off full collections.
    collections: list[int] = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    response = parse_response(long_stream(5000))
    gc.collect()
    if not enabled:
        gc.disable()
    gc.callbacks.append(count)
    try:
        result = decode_response(response)
        assert gc.isenabled() is enabled  # the caller's setting is restored
    finally:
        gc.callbacks.remove(count)
        gc.enable()
    assert collections == []
    assert len(result.content_chunk_ns) == 5000
    assert list(result.content_chunk_ns) == list(range(2, 5002))  # each event keeps its own read's stamp
    assert list(result.chunk_tokens) == [1] * 5000
    assert result.completion_tokens == 3 and result.saw_done


def test_the_collector_is_back_on_after_a_stream_that_fails_to_decode():
    bad = [(1, chunked(b"data: {not json\n\n"))]
    with pytest.raises(ValueError):
        decode_response(parse_response(bad))
    assert gc.isenabled()

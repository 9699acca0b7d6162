import json

import pytest

from workers.load.sse import data_payload, decode_stream


def line(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n"


def chat_chunk(content=None, finish=None):
    return {
        "choices": [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]
    }


def test_data_payload_ignores_blank_comment_and_other_fields():
    assert data_payload(b"\n") is None
    assert data_payload(b": keep-alive\n") is None
    assert data_payload(b"event: x\n") is None
    assert data_payload(b"data: [DONE]\n") == b"[DONE]"
    assert data_payload(b"data:{}\n") == b"{}"


def test_chat_stream_tokens_come_from_usage_not_chunks():
    # Speculative decoding: 2 content chunks carrying 7 tokens in all.
    lines = [
        (10, line({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})),
        (20, line(chat_chunk("Hello wor"))),
        (30, b"\n"),
        (40, line(chat_chunk("ld, again!", finish="stop"))),
        (50, line({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}})),
        (60, b"data: [DONE]\n"),
    ]
    result = decode_stream(lines)
    assert list(result.content_chunk_ns) == [20, 40]
    assert result.completion_tokens == 7
    assert result.prompt_tokens == 5
    assert result.finish_reason == "stop"
    assert result.text == "Hello world, again!"
    assert result.saw_done


def test_completions_stream_reads_text_field():
    lines = [
        (1, line({"choices": [{"index": 0, "text": "def f", "finish_reason": None}]})),
        (2, line({"choices": [{"index": 0, "text": "():", "finish_reason": "length"}]})),
        (3, line({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})),
    ]
    result = decode_stream(lines)
    assert result.text == "def f():"
    assert result.finish_reason == "length"
    assert not result.saw_done


def test_error_event_is_reported():
    result = decode_stream([(1, line({"error": {"message": "boom", "code": 500}}))])
    assert result.error_message == "boom"


def test_malformed_json_raises_value_error():
    with pytest.raises(ValueError):
        decode_stream([(1, b"data: {not json\n")])


def test_token_ids_give_exact_tokens_per_chunk():
    lines = [
        (1, line({"choices": [{"index": 0, "text": "ab", "token_ids": [5, 6, 7]}]})),
        (2, line({"choices": [{"index": 0, "text": "", "token_ids": [8]}]})),  # partial UTF-8: no text
        (3, line({"choices": [{"index": 0, "text": "c", "token_ids": [9], "finish_reason": "stop"}]})),
    ]
    result = decode_stream(lines)
    assert list(result.content_chunk_ns) == [1, 2, 3]
    assert list(result.chunk_tokens) == [3, 1, 1]


def test_chunk_tokens_are_none_when_the_server_sends_no_ids():
    result = decode_stream([(1, line(chat_chunk("hi")))])
    assert result.chunk_tokens is None

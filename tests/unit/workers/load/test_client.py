"""The streaming client against a stand-in server (engine behaviour is tested in tests/engine)."""

import asyncio

from tests.stubs.openai_stub import StubSettings, serve_stub
from vocab.schema import LoadSpec
from workers.load.client import Target, run_load
from workers.load.prompts import Prompt

PROMPTS = [Prompt(str(i), prompt=f"p{i}") for i in range(10)]


def run(base_url, prompts, load, endpoint="completions"):
    return asyncio.run(run_load(Target(base_url, "key", "m", endpoint), prompts, load, "measure"))


def test_tokens_come_from_usage_and_chunks_are_counted_separately():
    with serve_stub(StubSettings(tokens=12, tokens_per_chunk=4)) as url:
        records = run(url, PROMPTS, LoadSpec(concurrency=3, max_tokens=12))
    assert [r.request_idx for r in records] == list(range(10))
    for r in records:
        assert r.error_type is None
        assert r.completion_tokens == 12
        assert r.n_chunks == 3
        assert r.send_ns < r.chunk_ns[0] <= r.chunk_ns[-1] <= r.end_ns
        assert r.finish_reason == "length"


def test_chat_endpoint_reads_deltas():
    chats = [Prompt("c", messages=({"role": "user", "content": "hi"},))]
    with serve_stub(StubSettings(tokens=5)) as url:
        (record,) = run(url, chats, LoadSpec(concurrency=1, max_tokens=5), endpoint="chat")
    assert record.output_text == "tok " * 5
    assert record.completion_tokens == 5


def test_concurrency_is_held_at_the_configured_level():
    with serve_stub(StubSettings(tokens=5, delay_s=0.02)) as url:
        records = run(url, PROMPTS * 2, LoadSpec(concurrency=4, max_tokens=5))
    events = sorted([(r.send_ns, 1) for r in records] + [(r.end_ns, -1) for r in records])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak == 4


def test_connection_refused_is_recorded_not_raised():
    records = run("http://127.0.0.1:9", PROMPTS[:2], LoadSpec(concurrency=2, max_tokens=4))
    assert all(r.error_type == "ConnectionRefusedError" for r in records)


def test_the_client_imports_no_config_system():
    """The load client's footprint is its own: importing it loads neither hydra nor omegaconf
    (~16 MB of RSS in a process of ~25), and the schemas' MISSING is omegaconf's."""
    import subprocess
    import sys

    code = (
        "import sys, workers.load.client, vocab.schema; "
        "print(sorted(m for m in ('hydra', 'omegaconf', 'vllm', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    import omegaconf

    from vocab import schema

    assert schema.MISSING == omegaconf.MISSING

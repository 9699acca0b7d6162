"""Per-chunk values are kept as arrays of machine integers, never one Python object per chunk."""

import asyncio
from array import array

import pytest

from tests.stubs.openai_stub import StubSettings, serve_stub, until_next_step
from vocab.schema import LoadSpec
from workers.load.client import RequestRecord, Target, run_load
from workers.load.http1 import ReadBatcher, Reads
from workers.load.prompts import Prompt

PROMPTS = [Prompt(str(i), prompt=f"p{i}") for i in range(6)]


def run(url, load, endpoint="completions"):
    return asyncio.run(run_load(Target(url, "key", "m", endpoint), PROMPTS, load, "measure"))


@pytest.mark.parametrize("read_batch_ms", [0.0, 1.0])
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_records_keep_arrays_and_token_ids_add_up(read_batch_ms, endpoint):
    with serve_stub(StubSettings(tokens=10, tokens_per_chunk=3)) as url:
        records = run(url, LoadSpec(concurrency=2, max_tokens=10, read_batch_ms=read_batch_ms), endpoint)
    for r in records:
        assert r.error_type is None, r.error_message
        assert isinstance(r.chunk_ns, array) and r.chunk_ns.typecode == "q"
        assert isinstance(r.chunk_tokens, array) and r.chunk_tokens.typecode == "i"
        assert list(r.chunk_tokens) == [3, 3, 3, 1]
        assert sum(r.chunk_tokens) == r.completion_tokens == 10
        assert len(r.chunk_ns) == r.n_chunks == 4
        assert list(r.chunk_ns) == sorted(r.chunk_ns)
        assert r.output_text == "tok " * 10


def test_chunk_tokens_stay_none_when_ids_are_not_asked_for():
    with serve_stub(StubSettings(tokens=4)) as url:
        records = run(url, LoadSpec(concurrency=2, max_tokens=4, token_ids=False))
    assert all(r.chunk_tokens is None and len(r.chunk_ns) == 4 for r in records)


def test_a_record_built_from_lists_holds_arrays_that_behave_like_sequences():
    r = RequestRecord(0, "p", "measure", send_ns=0, chunk_ns=[5, 7, 9], chunk_tokens=[1, 2, 1])
    assert (r.chunk_ns.typecode, r.chunk_tokens.typecode) == ("q", "i")
    assert r.chunk_ns[0] == 5 and r.chunk_ns[-1] == 9 and len(r.chunk_ns) == 3
    assert sum(r.chunk_tokens) == 4 and list(r.chunk_ns) == [5, 7, 9]
    assert RequestRecord(0, "p", "measure", send_ns=0).chunk_tokens is None


def test_paced_stub_streams_on_a_shared_clock():
    assert until_next_step(10.0, 0.5) == 0.5  # on a boundary: the next one, never now
    assert until_next_step(10.2, 0.5) == pytest.approx(0.3)
    step = 0.03
    with serve_stub(StubSettings(tokens=5, step_s=step)) as url:
        records = run(url, LoadSpec(concurrency=3, max_tokens=5))
    for r in records:
        assert r.error_type is None and len(r.chunk_ns) == 5
        # Each chunk waits for its own step boundary: 5 chunks span at least 4 steps
        # (a lower bound only, with a margin for the client's own lateness on the first).
        assert (r.chunk_ns[-1] - r.chunk_ns[0]) / 1e9 >= 4 * step * 0.5


class CountingBatcher(ReadBatcher):
    def __init__(self) -> None:
        super().__init__(0.0)
        self.holds = 0

    def _hold(self) -> None:
        self.holds += 1
        super()._hold()


def test_read_batcher_holds_once_per_turn_with_reads_and_never_when_idle():
    batcher = CountingBatcher()

    async def main():
        batcher.arm()
        assert batcher.armed
        await asyncio.sleep(0)  # the turn ends: the hold runs and disarms
        assert not batcher.armed and batcher.holds == 1
        await asyncio.sleep(0)  # a turn without reads arms nothing
        assert batcher.holds == 1

    asyncio.run(main())


def test_reads_count_events_per_read_and_credit_a_split_one_to_the_earlier_read():
    reads = Reads.of([(1, b'data: {"a": 1}\n\ndata: {"b"'), (2, b": 2}\n"), (3, b"\ndata: x\n\n")])
    assert list(reads.stamps) == [1, 2, 3]
    assert list(reads.events) == [1, 1, 1]  # the second event's line ended in read 2
    assert list(reads.event_stamps()) == [1, 2, 3]
    assert reads.pairs()[1] == (2, b": 2}\n")


def test_a_reused_buffer_holds_only_the_current_response():
    buffer = bytearray()
    first = Reads(buffer)
    first.add(1, b"x" * 100)
    second = Reads(buffer)
    second.add(2, b"short")
    assert second.raw() == b"short" and len(buffer) >= 100  # reused, not reallocated

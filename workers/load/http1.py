"""A minimal HTTP/1.1 client for streamed POSTs: raw socket reads and their timestamps, nothing more.

Why not aiohttp: its StreamReader does Python work for every HTTP chunk
(feed_data, chunk-boundary bookkeeping, flow control), and vLLM sends one HTTP
chunk per SSE event. Profiled on the stand-in server that was ~5 µs per event
before any of our own code ran, which kept the client from the issue's CPU
target. Here the hot path is one `perf_counter_ns()`, the bytes appended to
one buffer and three integers appended to arrays per socket read (`Reads`: no
Python object is kept per read); headers, chunked framing and SSE lines are
parsed once, after the response is complete (`parse_response`).

Scope, on purpose: plain HTTP (no TLS), POST with a JSON body, responses framed
by `Transfer-Encoding: chunked`, `Content-Length`, or connection close. That is
what an OpenAI-compatible server on a cluster node speaks. One connection per
worker, kept alive between requests and reopened when the server closed it or it
sat idle longer than the server would keep it.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, chain, repeat
from urllib.parse import urlsplit

perf_counter_ns = time.perf_counter_ns
_flatten = chain.from_iterable

# The terminator of a chunked body, with the CRLF that ends the chunk before it
# (or the header block, for an empty body). SSE payloads are JSON lines framed
# by "\n", so "\r\n0\r\n\r\n" cannot occur inside data; a false hit would only
# cost a full parse that says "not yet".
CHUNKED_END = b"\r\n0\r\n\r\n"
HEADER_END = b"\r\n\r\n"
# Ends an SSE event (vLLM sends one "data: ...\n\n" per event).
EVENT_END = b"\n\n"
MIN_BUFFER = 16384


class Reads:
    """One response as it arrived: its bytes in one buffer and, per socket read, three integers.

    Per read: `stamps` (perf_counter_ns when it arrived), `ends` (the bytes
    received up to and including it) and `events` (how many "\n\n" begin in
    it: an SSE line is complete when its "\n" arrives). Arrays of machine
    integers, so a long stream holds no Python object per read. The bytes are
    `data[:size]`: a connection hands the same buffer to each of its responses
    in turn, so it is allocated once per connection instead of regrown (and
    the heap fragmented) by every response.
    """

    __slots__ = ("data", "ends", "events", "size", "stamps")

    def __init__(self, buffer: bytearray | None = None) -> None:
        self.data = bytearray() if buffer is None else buffer
        self.size = 0
        self.stamps = array("q")
        self.ends = array("q")
        self.events = array("q")

    def add(self, t_ns: int, blob: bytes) -> None:
        """Record one read (StreamProtocol.data_received inlines the same steps)."""
        buf = self.data
        start = self.size
        end = self.size = start + len(blob)
        if end > len(buf):
            buf += bytes(max(end, 2 * len(buf), MIN_BUFFER) - len(buf))
        buf[start:end] = blob
        self.stamps.append(t_ns)
        self.ends.append(end)
        n = buf.count(EVENT_END, start and start - 1, end)
        if n and blob[0] == 10 and start and buf[start - 1] == 10:
            self.events[-1] += 1  # a "\n\n" split across reads: its line ended in the earlier one
            n -= 1
        self.events.append(n)

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, bytes]]) -> Reads:
        reads = cls()
        for t_ns, blob in pairs:
            reads.add(t_ns, blob)
        return reads

    def __len__(self) -> int:
        return len(self.stamps)

    def raw(self) -> bytes:
        """The bytes received (a copy: the buffer is reused by the connection's next response)."""
        with memoryview(self.data) as view:
            return bytes(view[: self.size])

    def event_stamps(self) -> array:
        """The stamp of the read in which each "\n\n" begins, in order (built in C, no Python loop)."""
        return array("q", _flatten(map(repeat, self.stamps, self.events)))

    def pairs(self) -> list[tuple[int, bytes]]:
        """(stamp, bytes) per read: for tests and debugging, not the hot path."""
        data = self.raw()
        return [(t, data[a:b]) for t, a, b in zip(self.stamps, [0, *self.ends[:-1]], self.ends, strict=True)]


class ServerDisconnected(ConnectionError):
    """The server closed the connection before the response was complete."""


class MalformedResponse(ValueError):
    """The bytes received are not an HTTP/1.1 response this client understands."""


@dataclass
class Response:
    """A parsed response: status, headers, the de-framed body, and the raw reads it came from."""

    status: int
    headers: dict[str, str]
    keep_alive: bool
    body: bytes
    # The socket reads it came from, header and chunk framing included.
    reads: Reads
    # Where the body's pieces lie in the concatenated reads: (offset, length);
    # None until body_lines needs them (the fast chunked path skips them).
    segments: list[tuple[int, int]] | None
    body_start: int

    def body_lines(self) -> list[tuple[int, bytes]]:
        """Body lines (without "\n"), each stamped with the read that delivered its last byte.

        The general path, for any framing: the client saw a line complete at the
        read that completed it. Lines split across reads take the later stamp.
        """
        if self.segments is None:
            self.segments = _chunk_segments_slow(self.reads.raw(), self.body_start, False)
        segments = self.segments
        read_end = self.reads.ends
        stamps = self.reads.stamps
        seg_body_start = list(accumulate((size for _, size in segments[:-1]), initial=0))

        def stamp(body_pos: int) -> int:
            seg = bisect_right(seg_body_start, body_pos) - 1
            raw_pos = segments[seg][0] + body_pos - seg_body_start[seg]
            return stamps[min(bisect_right(read_end, raw_pos), len(stamps) - 1)]

        lines: list[tuple[int, bytes]] = []
        offset = 0
        for line in self.body.split(b"\n"):
            if line:
                lines.append((stamp(min(offset + len(line), len(self.body) - 1)), line))
            offset += len(line) + 1
        return lines


class ReadBatcher:
    """Holds the event loop for `interval_s` after a turn in which any socket was read.

    Blocking the loop on purpose: while it sleeps, the rest of a decode step's
    chunks (a server writes them one stream after another) pile up in the
    socket buffers, and the next turn's one poll returns every ready
    connection. A turn that read nothing arms nothing, so an idle or paced
    stream costs no wake-ups between its bursts. Every timestamp is late by at
    most the interval.
    """

    __slots__ = ("armed", "interval_s")

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.armed = False

    def arm(self) -> None:
        """Called by the first read after a hold: hold once this turn's reads are done."""
        self.armed = True
        asyncio.get_running_loop().call_soon(self._hold)

    def _hold(self) -> None:
        time.sleep(self.interval_s)
        self.armed = False


class _Framing:
    """How the end of the body is recognised, decided once the header block is in."""

    def __init__(self, head: bytes) -> None:
        fields = _header_fields(head)
        self.chunked = "chunked" in fields.get("transfer-encoding", "").lower()
        length = fields.get("content-length")
        self.content_length = int(length) if length is not None and not self.chunked else None
        self.header_len = len(head) + len(HEADER_END)


class StreamProtocol(asyncio.Protocol):
    """Collects one response's socket reads into `Reads`; resolves `done` when the response is complete."""

    def __init__(self, batcher: ReadBatcher | None = None) -> None:
        self.transport: asyncio.Transport | None = None
        self.reads = Reads()
        self.done: asyncio.Future[None] | None = None
        self.closed = False
        self._framing: _Framing | None = None
        self._batcher = batcher

    def start(self, loop: asyncio.AbstractEventLoop, reads: Reads) -> None:
        self.reads, self._framing = reads, None
        self.done = loop.create_future()

    # asyncio callbacks -------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        # Hot path: Reads.add inlined (a timestamp, the bytes into one buffer,
        # three integers into arrays), then one C call to see if it is complete.
        stamp = perf_counter_ns()
        reads = self.reads
        buf = reads.data
        start = reads.size
        end = reads.size = start + len(data)
        if end > len(buf):
            buf += bytes(
                max(end, 2 * len(buf), MIN_BUFFER) - len(buf)
            )  # doubling: few moves, little heap churn
        buf[start:end] = data
        reads.stamps.append(stamp)
        reads.ends.append(end)
        n = buf.count(EVENT_END, start and start - 1, end)
        if n and data[0] == 10 and start and buf[start - 1] == 10:
            reads.events[-1] += 1  # a "\n\n" split across reads: its line ended in the earlier one
            n -= 1
        reads.events.append(n)
        batcher = self._batcher
        if batcher is not None and not batcher.armed:
            batcher.arm()
        framing = self._framing
        if framing is None:
            head_end = buf.find(HEADER_END, 0, end)
            if head_end < 0:
                return
            framing = self._framing = _Framing(bytes(buf[:head_end]))
        if framing.chunked:
            if buf.endswith(CHUNKED_END, 0, end):
                self._finish()
        elif framing.content_length is not None and end >= framing.header_len + framing.content_length:
            self._finish()

    def eof_received(self) -> bool | None:
        return None  # let the transport close; connection_lost decides

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is None or self.done.done():
            return
        framing = self._framing
        if framing is not None and not framing.chunked and framing.content_length is None:
            self.done.set_result(None)  # body delimited by connection close
        else:
            self.done.set_exception(exc or ServerDisconnected("server closed the connection mid-response"))

    def _finish(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)


def _header_fields(head: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    for raw in head.split(b"\r\n")[1:]:
        name, sep, value = raw.partition(b":")
        if sep:
            fields[name.strip().decode("latin-1").lower()] = value.strip().decode("latin-1")
    return fields


def parse_response(reads: Reads | list[tuple[int, bytes]], complete: bool = True) -> Response:
    """Status, headers and de-framed body from the raw reads of one response.

    Raises MalformedResponse on anything that is not a complete HTTP/1.1
    response; with complete=False (a request that failed midway) a truncated
    body is returned as far as it got.
    """
    if not isinstance(reads, Reads):
        reads = Reads.of(reads)
    raw = reads.raw()
    head_end = raw.find(HEADER_END)
    if head_end < 0:
        raise MalformedResponse("no complete header block")
    head = raw[:head_end]
    status_line = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1.") or not status_line[1].isdigit():
        raise MalformedResponse(f"bad status line {head[:80]!r}")
    framing = _Framing(head)
    fields = _header_fields(head)
    pos = framing.header_len
    segments: list[tuple[int, int]] | None
    if framing.chunked:
        body, segments = _dechunk(raw, pos, complete)
    else:
        end = len(raw) if framing.content_length is None else pos + framing.content_length
        if end > len(raw) and not complete:
            end = len(raw)
        if end > len(raw):
            raise MalformedResponse("body shorter than Content-Length")
        segments = [(pos, end - pos)]
        body = raw[pos:end]
    keep_alive = fields.get("connection", "").lower() != "close"
    return Response(int(status_line[1]), fields, keep_alive, body, reads, segments, pos)


def _dechunk(raw: bytes, pos: int, complete: bool) -> tuple[bytes, list[tuple[int, int]] | None]:
    """The data of a chunked body starting at `pos`, and its segments when they were computed.

    Fast path, in C: a streaming server's chunks hold SSE events, which never
    contain "\r\n", so splitting on it gives size, data, size, data, ... "0";
    accepted only when every size matches its data. Anything else (chunk
    extensions, CRLF inside data, a truncated body) takes the byte-exact loop.
    """
    parts = raw.split(b"\r\n")[raw.count(b"\r\n", 0, pos) :]  # no copy of the body to split it
    sizes, datas = parts[0:-3:2], parts[1:-3:2]
    try:
        fast = parts[-3:] == [b"0", b"", b""] and list(map(len, datas)) == list(map(int, sizes, repeat(16)))
    except ValueError:
        fast = False
    if fast:
        return b"".join(datas), None
    segments = _chunk_segments_slow(raw, pos, complete)
    return b"".join(raw[start : start + size] for start, size in segments), segments


def _chunk_segments_slow(raw: bytes, pos: int, complete: bool) -> list[tuple[int, int]]:
    segments: list[tuple[int, int]] = []
    while True:
        size_end = raw.find(b"\r\n", pos)
        if size_end < 0:
            if not complete:
                return segments
            raise MalformedResponse("chunked body ended without its last chunk")
        try:
            size = int(raw[pos:size_end].split(b";", 1)[0], 16)
        except ValueError as exc:
            raise MalformedResponse(f"bad chunk size {raw[pos:size_end][:20]!r}") from exc
        if size == 0:
            return segments
        if size_end + 2 + size > len(raw):
            if not complete:
                segments.append((size_end + 2, len(raw) - size_end - 2))
                return segments
            raise MalformedResponse("chunk shorter than its declared size")
        segments.append((size_end + 2, size))
        pos = size_end + 2 + size + 2


class Connection:
    """One keep-alive connection to one server, reopened when needed; one request at a time."""

    def __init__(self, base_url: str, idle_close_s: float, batcher: ReadBatcher | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only plain http:// URLs are supported, got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.base_path = parts.path.rstrip("/")
        self.idle_close_s = idle_close_s
        self.batcher = batcher
        self._buffer = bytearray()  # every response's bytes, one after another
        self._protocol: StreamProtocol | None = None
        self._last_used_s = 0.0

    def request_bytes(self, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        lines = [f"POST {self.base_path}{path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}", "", ""]
        return "\r\n".join(lines).encode("latin-1") + body

    def new_reads(self) -> Reads:
        """Where the next response's reads go: the connection's buffer (parse them before the next post)."""
        return Reads(self._buffer)

    async def _protocol_for_request(self) -> StreamProtocol:
        stale = time.monotonic() - self._last_used_s > self.idle_close_s
        if self._protocol is None or self._protocol.closed or stale:
            self.close()
            loop = asyncio.get_running_loop()
            _, protocol = await loop.create_connection(
                lambda: StreamProtocol(self.batcher), self.host, self.port
            )
            self._protocol = protocol
        return self._protocol

    async def post(self, request: bytes, reads: Reads) -> None:
        """Send one request; collect the raw reads of its response into `reads` until it is complete.

        Raises OSError (including ServerDisconnected) on connection failures,
        with `reads` holding what arrived; the caller applies its own timeout
        (asyncio.timeout) around this.
        """
        protocol = await self._protocol_for_request()
        protocol.start(asyncio.get_running_loop(), reads)
        assert protocol.transport is not None and protocol.done is not None
        try:
            protocol.transport.write(request)
            await protocol.done
        except BaseException:
            self.close()  # a half-read response must never be reused
            raise
        finally:
            self._last_used_s = time.monotonic()

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._protocol = None

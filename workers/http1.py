"""A minimal HTTP/1.1 client for streamed POSTs: raw socket reads and their timestamps, nothing more.

Why not aiohttp: its StreamReader does Python work for every HTTP chunk
(feed_data, chunk-boundary bookkeeping, flow control), and vLLM sends one HTTP
chunk per SSE event. Profiled on the stand-in server that was ~5 µs per event
before any of our own code ran, which kept the client from the issue's CPU
target. Here the hot path is one `perf_counter_ns()` and one list append per
socket read; headers, chunked framing and SSE lines are parsed once, after the
response is complete (`parse_response`).

Scope, on purpose: plain HTTP (no TLS), POST with a JSON body, responses framed
by `Transfer-Encoding: chunked`, `Content-Length`, or connection close. That is
what an OpenAI-compatible server on a cluster node speaks. One connection per
worker, kept alive between requests and reopened when the server closed it or it
sat idle longer than the server would keep it.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from urllib.parse import urlsplit

# The terminator of a chunked body, with the CRLF that ends the chunk before it
# (or the header block, for an empty body). SSE payloads are JSON lines framed
# by "\n", so "\r\n0\r\n\r\n" cannot occur inside data; a false hit would only
# cost a full parse that says "not yet".
CHUNKED_END = b"\r\n0\r\n\r\n"
HEADER_END = b"\r\n\r\n"


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
    # (perf_counter_ns, bytes) per socket read, header and chunk framing included.
    reads: list[tuple[int, bytes]]
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
            self.segments = _chunk_segments_slow(b"".join(b for _, b in self.reads), self.body_start, False)
        segments = self.segments
        read_end = list(accumulate(len(blob) for _, blob in self.reads))
        stamps = [t_ns for t_ns, _ in self.reads]
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


class _Framing:
    """How the end of the body is recognised, decided once the header block is in."""

    def __init__(self, head: bytes) -> None:
        fields = _header_fields(head)
        self.chunked = "chunked" in fields.get("transfer-encoding", "").lower()
        length = fields.get("content-length")
        self.content_length = int(length) if length is not None and not self.chunked else None
        self.header_len = len(head) + len(HEADER_END)


class StreamProtocol(asyncio.Protocol):
    """Collects (timestamp_ns, bytes) per socket read; resolves `done` when the response is complete."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reads: list[tuple[int, bytes]] = []
        self.done: asyncio.Future[None] | None = None
        self.closed = False
        self._received = 0
        self._tail = b""
        self._framing: _Framing | None = None

    def start(self, loop: asyncio.AbstractEventLoop, reads: list[tuple[int, bytes]]) -> None:
        self.reads, self._received, self._tail, self._framing = reads, 0, b"", None
        self.done = loop.create_future()

    # asyncio callbacks -------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        # Hot path: a timestamp and the raw bytes.
        self.reads.append((time.perf_counter_ns(), data))
        self._received += len(data)
        if self._framing is None:
            head_end = b"".join(blob for _, blob in self.reads).find(HEADER_END)
            if head_end < 0:
                return
            head = b"".join(blob for _, blob in self.reads)[:head_end]
            self._framing = _Framing(head)
        framing = self._framing
        if framing.chunked:
            self._tail = (self._tail + data)[-len(CHUNKED_END) :]
            if self._tail == CHUNKED_END:
                self._finish()
        elif (
            framing.content_length is not None
            and self._received >= framing.header_len + framing.content_length
        ):
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


def parse_response(reads: list[tuple[int, bytes]], complete: bool = True) -> Response:
    """Status, headers and de-framed body from the raw reads of one response.

    Raises MalformedResponse on anything that is not a complete HTTP/1.1
    response; with complete=False (a request that failed midway) a truncated
    body is returned as far as it got.
    """
    raw = b"".join(blob for _, blob in reads)
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
    parts = raw[pos:].split(b"\r\n")
    sizes, datas = parts[0:-3:2], parts[1:-3:2]
    try:
        fast = parts[-3:] == [b"0", b"", b""] and list(map(len, datas)) == [int(s, 16) for s in sizes]
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

    def __init__(self, base_url: str, idle_close_s: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only plain http:// URLs are supported, got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.base_path = parts.path.rstrip("/")
        self.idle_close_s = idle_close_s
        self._protocol: StreamProtocol | None = None
        self._last_used_s = 0.0

    def request_bytes(self, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        lines = [f"POST {self.base_path}{path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}", "", ""]
        return "\r\n".join(lines).encode("latin-1") + body

    async def _protocol_for_request(self) -> StreamProtocol:
        stale = time.monotonic() - self._last_used_s > self.idle_close_s
        if self._protocol is None or self._protocol.closed or stale:
            self.close()
            loop = asyncio.get_running_loop()
            _, protocol = await loop.create_connection(StreamProtocol, self.host, self.port)
            self._protocol = protocol
        return self._protocol

    async def post(self, request: bytes, reads: list[tuple[int, bytes]]) -> None:
        """Send one request; append the raw reads of its response to `reads` until it is complete.

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

"""Bring-your-own traces: rows from JSONL, a JSON array, Parquet or a Hugging Face `save_to_disk` folder.

Each row is one of (recognised by its keys):
- this project's rows: `id` plus `prompt` or `messages`;
- OpenAI chat: `messages: [{role, content}, ...]`, content a string or text parts;
- ShareGPT: `conversations: [{from, value}, ...]`;
- plain: `{"prompt": "..."}`.
A recorded conversation that ends with the assistant's answer is cut back to
the last user turn, so the engine is asked for that answer. Rows without `id`
get `row-<n>`. A row that cannot be read raises an error naming the file, the
row number (the line number in JSONL, the 1-based element of a JSON array,
1-based in Parquet and Arrow) and the reason; with `skip_bad_rows` it is
counted instead, never silently dropped. A line that is not UTF-8 is such a
row (named with its byte offset). A file that cannot be read at all (no
permission, binary, compressed, a corrupt Parquet or Arrow file, a JSON array
broken in the middle) raises one error naming the file and why, never a
traceback.

A file whose first character is `[` is one JSON array of rows (the form
ShareGPT ships in: `[{"conversations": [...]}, ...]`); it is read
element by element without loading the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vocab.errors import ConfigError

FORMATS = ("auto", "jsonl", "json", "parquet", "hf_disk")
# ShareGPT speakers and OpenAI roles -> OpenAI roles.
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bing": "assistant"}
ROLES |= {"bard": "assistant", "assistant": "assistant", "model": "assistant", "system": "system"}
KEPT_REASONS = 5
# JSON arrays are read this many bytes at a time; one element may be at most MAX_ELEMENT_BYTES.
CHUNK_BYTES = 1 << 20
MAX_ELEMENT_BYTES = 64 << 20


class BadRow(ValueError):
    """One row that cannot become a prompt; its message is the reason."""


@dataclass(frozen=True)
class TraceRow:
    """A parsed row: its number in the file and its fields."""

    row: int
    prompt_id: str
    prompt: str | None
    messages: tuple[dict[str, str], ...] | None


@dataclass
class Skipped:
    """Rows left out under skip_bad_rows: how many, and the first few reasons."""

    count: int = 0
    reasons: list[str] = field(default_factory=list)

    def add(self, reason: str) -> None:
        self.count += 1
        if len(self.reasons) < KEPT_REASONS:
            self.reasons.append(reason)


class UnreadableTrace(ConfigError):
    """A trace file that cannot be read as rows at all (not one bad row)."""


def read_rows(path: Path, format: str = "auto", skip: Skipped | None = None) -> Iterator[TraceRow]:
    """Parsed rows of a trace; bad rows raise ConfigError, or go to `skip` when it is given.

    A file that cannot be read at all raises UnreadableTrace (a ConfigError) naming it and why.
    """
    seen: set[str] = set()
    read = 0
    for row_no, raw in _guarded(path, raw_rows(path, resolve_format(path, format))):
        try:
            row = parse_row(row_no, raw)
            if row.prompt_id in seen:
                raise BadRow(f"duplicate id '{row.prompt_id}'")
        except BadRow as exc:
            reason = f"{path}:{row_no}: bad corpus row: {exc}"
            if skip is None:
                raise ConfigError(f"{reason} ({_bad_row_hint(read, exc)})") from exc
            skip.add(reason)
            continue
        seen.add(row.prompt_id)
        read += 1
        yield row


# Stands for the corpus's name in a hint; whoever knows the name fills it in (`named`).
NAME = "<name>"


def named(message: str, corpus: str) -> str:
    """`message` with its hint's corpus placeholder replaced by the corpus's name."""
    return message.replace(f"+corpus.{NAME}.", f"+corpus.{corpus}.")


def _bad_row_hint(good_rows: int, exc: BadRow) -> str:
    """The fix to suggest: skipping rows only once some rows read well (else it would drop them all)."""
    if isinstance(exc, NotUtf8):
        return (
            "convert the file to UTF-8, e.g. `iconv -f latin1 -t utf-8`, "
            "or skip such rows with +corpus.<name>.skip_bad_rows=true"
        )
    if good_rows == 0:
        return (
            "no row before it could be read: check that the file is JSON lines, one JSON array of rows, "
            "Parquet or a save_to_disk folder (corpus.format) with rows as in workers/load/traces.py; "
            "+corpus.<name>.skip_bad_rows=true skips and counts such rows"
        )
    return "skip and count such rows with +corpus.<name>.skip_bad_rows=true (or in the corpus's file)"


def _guarded(path: Path, rows: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """`rows`, with any failure to read the file turned into one UnreadableTrace naming it."""
    import pyarrow as pa

    last = 0
    try:
        for row_no, raw in rows:
            last = row_no
            yield row_no, raw
    except ConfigError:
        raise
    except OSError as exc:
        if exc.errno is None:  # Arrow's own IOError: the bytes are wrong, not the filesystem
            raise _corrupt(path, last, exc) from exc
        raise UnreadableTrace(
            f"corpus file {path} cannot be read ({exc.strerror or exc}); check its permissions and path"
        ) from exc
    except (ValueError, TypeError, KeyError, pa.ArrowException) as exc:
        raise _corrupt(path, last, exc) from exc


def _corrupt(path: Path, last: int, exc: Exception) -> UnreadableTrace:
    where = f"after row {last}" if last else "at its start"
    return UnreadableTrace(
        f"corpus file {path} is unreadable {where} ({type(exc).__name__}: {_short(exc)}); "
        "replace it with a whole copy, or set corpus.format to what it is"
    )


def _short(exc: Exception, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def resolve_format(path: Path, format: str) -> str:
    """The explicit format, else one guessed from the path (a folder is a save_to_disk dataset)."""
    if format not in FORMATS:
        raise ConfigError(f"unknown corpus format '{format}'; one of {', '.join(FORMATS)}")
    if format != "auto":
        return format
    if path.is_dir():
        return "hf_disk"
    return "parquet" if path.suffix in (".parquet", ".pq") else "jsonl"  # jsonl also reads a JSON array


def raw_rows(path: Path, format: str) -> Iterator[tuple[int, Any]]:
    """(row number, decoded row or a BadRow) in file order."""
    if format in ("jsonl", "json"):
        yield from _text_rows(path, format)
    elif format == "parquet":
        yield from _parquet_rows(path)
    else:
        yield from _arrow_rows(hf_disk_files(path))


class NotUtf8(BadRow):
    """A line whose bytes are not UTF-8 text."""


# Leading bytes of files that are not text, and what to do instead.
MAGIC = (
    (b"PAR1", "is a Parquet file; set corpus.format=parquet (or give it a .parquet name)"),
    (b"ARROW1", "is an Arrow file; point corpus.path at its save_to_disk folder (corpus.format=hf_disk)"),
    (b"\x1f\x8b", "is gzip-compressed; decompress it (gunzip) and point corpus.path at the result"),
    (b"PK\x03\x04", "is a zip archive; unpack it and point corpus.path at the trace inside"),
    (b"\x28\xb5\x2f\xfd", "is zstd-compressed; decompress it (zstd -d) and point corpus.path at the result"),
    (b"\xff\xfe", "is UTF-16 text; convert it to UTF-8 (iconv -f utf-16 -t utf-8)"),
    (b"\xfe\xff", "is UTF-16 text; convert it to UTF-8 (iconv -f utf-16 -t utf-8)"),
)
UTF8_BOM = b"\xef\xbb\xbf"


def _text_rows(path: Path, format: str) -> Iterator[tuple[int, Any]]:
    """JSON lines, or one JSON array of rows when the file's first character is `[`."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    for magic, what in MAGIC:
        if head.startswith(magic):
            raise UnreadableTrace(f"corpus file {path} {what}")
    if (nul := head.find(b"\x00")) >= 0:
        raise UnreadableTrace(
            f"corpus file {path} is binary (a NUL byte at byte offset {nul}), not JSON text; "
            "a trace is JSON lines, one JSON array of rows, Parquet or a save_to_disk folder"
        )
    start = head.removeprefix(UTF8_BOM).lstrip()
    if start.startswith(b"[") or (format == "json" and start):
        yield from _json_array_rows(path)
    else:
        yield from _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    offset = 0
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            at, offset = offset, offset + len(raw)
            if line_no == 1:
                raw = raw.removeprefix(UTF8_BOM)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                where = f"byte 0x{raw[exc.start]:02x} at byte offset {at + exc.start} of the file"
                yield line_no, NotUtf8(f"not UTF-8 text ({where}: {exc.reason})")
                continue
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line)
            except json.JSONDecodeError as exc:
                yield line_no, BadRow(f"not JSON ({exc})")


def _utf8_chunks(path: Path) -> Iterator[str]:
    """The file's text in chunks; bytes that are not UTF-8 raise UnreadableTrace with their offset."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    done = 0
    with path.open("rb") as handle:
        first = True
        while True:
            data = handle.read(CHUNK_BYTES)
            pending = len(decoder.getstate()[0])
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                raise UnreadableTrace(
                    f"corpus file {path} is not UTF-8 text (byte offset {done - pending + exc.start}: "
                    f"{exc.reason}); convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8`"
                ) from exc
            done += len(data)
            if first:
                text, first = text.removeprefix("\ufeff"), False
            if text:
                yield text
            if not data:
                return


def _json_array_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """The elements of a file holding one JSON array, read a chunk at a time.

    An element that is not a JSON value breaks the array: the rest cannot be
    found, so that is an error for the file (naming the element), not a bad row.
    """
    reader = _ArrayReader(path)
    if reader.next_char() != "[":
        raise reader.broken("at its start (it does not open with '[')")
    reader.pos += 1
    index = 0
    if reader.next_char() == "]":
        reader.pos += 1
    else:
        while True:
            if reader.next_char() is None:
                raise reader.broken(f"after element {index} (the file ends before its closing ']')")
            index += 1
            yield index, reader.element(index)
            char = reader.next_char()
            if char == ",":
                reader.pos += 1
                continue
            if char == "]":
                reader.pos += 1
                break
            found = "the end of the file" if char is None else repr(char)
            raise reader.broken(f"after element {index} (expected ',' or ']', found {found})")
    if reader.next_char() is not None:
        raise reader.broken(f"after its closing ']' (more follows after element {index})")


class _ArrayReader:
    """A JSON array's text as it is read, a chunk at a time: `buf` from `pos` is still to read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.chunks = _utf8_chunks(path)
        self.decoder = json.JSONDecoder()
        self.buf, self.pos, self.eof = "", 0, False

    def more(self) -> bool:
        """Append the next chunk to what is left; False at the end of the file."""
        chunk = next(self.chunks, None)
        if chunk is None:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos :] + chunk, 0
        return True

    def next_char(self) -> str | None:
        """The next character that is not whitespace (not consumed), None at the end of the file."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return None

    def element(self, index: int) -> Any:
        """The JSON value at `pos` (element `index`, 1-based), consumed."""
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > MAX_ELEMENT_BYTES or not self.more():
                    raise self.broken(f"at element {index} (not JSON: {exc.msg})") from exc
                continue
            # A number cut at a chunk's end decodes too: read on until the value is followed.
            if end == len(self.buf) and not self.eof and self.more():
                continue
            self.pos = end
            return value

    def broken(self, what: str) -> UnreadableTrace:
        return UnreadableTrace(
            f"corpus file {self.path} holds a JSON array that is broken {what}; "
            "repair it, or convert it to JSON lines (one row a line, e.g. `jq -c '.[]'`)"
        )


def _parquet_rows(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    row_no = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            row_no += 1
            yield row_no, row


def hf_disk_files(path: Path) -> list[Path]:
    """The Arrow shards of a `save_to_disk` folder, in order (its state.json lists them).

    A DatasetDict folder (dataset_dict.json, one sub-folder per split) is read
    from its `train` split, or its only split.
    """
    dict_file = path / "dataset_dict.json"
    if dict_file.is_file():
        splits = json.loads(dict_file.read_text())["splits"]
        if "train" not in splits and len(splits) != 1:
            raise ConfigError(f"{path} holds splits {splits}; set corpus.path to one split's folder")
        path = path / ("train" if "train" in splits else splits[0])
    state = path / "state.json"
    if not state.is_file():
        raise ConfigError(f"{path} is not a dataset saved with save_to_disk (no state.json)")
    return [path / entry["filename"] for entry in json.loads(state.read_text())["_data_files"]]


def _arrow_rows(files: list[Path]) -> Iterator[tuple[int, Any]]:
    import pyarrow as pa

    row_no = 0
    for file in files:
        with pa.memory_map(str(file)) as source:
            try:
                reader: Any = pa.ipc.open_stream(source)  # what `datasets` writes
            except pa.ArrowInvalid:
                reader = pa.ipc.open_file(source)
            for batch in _batches(reader):
                for row in batch.to_pylist():
                    row_no += 1
                    yield row_no, row


def _batches(reader: Any) -> Iterator[Any]:
    if hasattr(reader, "num_record_batches"):
        yield from (reader.get_batch(i) for i in range(reader.num_record_batches))
    else:
        yield from reader


def parse_row(row_no: int, raw: Any) -> TraceRow:
    """One row in any of the accepted shapes; BadRow says why it is not a prompt."""
    if isinstance(raw, BadRow):
        raise raw
    if not isinstance(raw, dict):
        raise BadRow(f"expected an object, got {type(raw).__name__}")
    shapes = [key for key in ("prompt", "messages", "conversations") if raw.get(key) is not None]
    if len(shapes) != 1:
        raise BadRow("a row needs exactly one of `prompt`, `messages`, `conversations`")
    prompt_id = str(raw["id"]) if raw.get("id") is not None else f"row-{row_no}"
    if shapes == ["prompt"]:
        if not isinstance(raw["prompt"], str) or not raw["prompt"]:
            raise BadRow("`prompt` must be a non-empty string")
        return TraceRow(row_no, prompt_id, raw["prompt"], None)
    if shapes == ["messages"]:
        messages = [_openai_message(i, m) for i, m in enumerate(_list(raw["messages"], "messages"))]
    else:
        messages = [_sharegpt_turn(i, t) for i, t in enumerate(_list(raw["conversations"], "conversations"))]
    return TraceRow(row_no, prompt_id, None, tuple(_up_to_last_user(messages)))


def _list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise BadRow(f"`{key}` must be a non-empty list")
    return value


def _openai_message(index: int, message: Any) -> dict[str, str]:
    if not isinstance(message, dict) or message.get("role") not in ROLES.values():
        raise BadRow(f"message {index} needs a role of system, user or assistant")
    return {"role": message["role"], "content": _text(index, message.get("content"))}


def _text(index: int, content: Any) -> str:
    """A string, or OpenAI content parts that are all text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        if all(
            isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            for p in content
        ):
            return "".join(p["text"] for p in content)
        raise BadRow(f"message {index} has non-text content parts; only text is sent")
    raise BadRow(f"message {index} needs `content` as a string or a list of text parts")


def _sharegpt_turn(index: int, turn: Any) -> dict[str, str]:
    if not isinstance(turn, dict) or turn.get("from") not in ROLES:
        raise BadRow(f"turn {index} needs `from` (human, gpt, system, ...)")
    if not isinstance(turn.get("value"), str):
        raise BadRow(f"turn {index} needs `value` as a string")
    return {"role": ROLES[turn["from"]], "content": turn["value"]}


def _up_to_last_user(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Drop the recorded answer(s) after the last user turn; a prompt must end with the user."""
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if last_user is None:
        raise BadRow("no user turn to answer")
    return messages[: last_user + 1]

"""Bring-your-own traces: rows from JSONL, Parquet or a Hugging Face `save_to_disk` folder.

Each row is one of (recognised by its keys):
- this project's rows: `id` plus `prompt` or `messages`;
- OpenAI chat: `messages: [{role, content}, ...]`, content a string or text parts;
- ShareGPT: `conversations: [{from, value}, ...]`;
- plain: `{"prompt": "..."}`.
A recorded conversation that ends with the assistant's answer is cut back to
the last user turn, so the engine is asked for that answer. Rows without `id`
get `row-<n>`. A row that cannot be read raises an error naming the file, the
row number (the line number in JSONL, 1-based in Parquet and Arrow) and the
reason; with `skip_bad_rows` it is counted instead, never silently dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grid.errors import ConfigError

FORMATS = ("auto", "jsonl", "parquet", "hf_disk")
# ShareGPT speakers and OpenAI roles -> OpenAI roles.
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bing": "assistant"}
ROLES |= {"bard": "assistant", "assistant": "assistant", "model": "assistant", "system": "system"}
KEPT_REASONS = 5


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


def read_rows(path: Path, format: str = "auto", skip: Skipped | None = None) -> Iterator[TraceRow]:
    """Parsed rows of a trace; bad rows raise ConfigError, or go to `skip` when it is given."""
    seen: set[str] = set()
    for row_no, raw in raw_rows(path, resolve_format(path, format)):
        try:
            row = parse_row(row_no, raw)
            if row.prompt_id in seen:
                raise BadRow(f"duplicate id '{row.prompt_id}'")
        except BadRow as exc:
            reason = f"{path}:{row_no}: bad corpus row: {exc}"
            if skip is None:
                raise ConfigError(
                    f"{reason} (set corpus.skip_bad_rows=true to skip and count such rows)"
                ) from exc
            skip.add(reason)
            continue
        seen.add(row.prompt_id)
        yield row


def resolve_format(path: Path, format: str) -> str:
    """The explicit format, else one guessed from the path (a folder is a save_to_disk dataset)."""
    if format not in FORMATS:
        raise ConfigError(f"unknown corpus format '{format}'; one of {', '.join(FORMATS)}")
    if format != "auto":
        return format
    if path.is_dir():
        return "hf_disk"
    return "parquet" if path.suffix in (".parquet", ".pq") else "jsonl"


def raw_rows(path: Path, format: str) -> Iterator[tuple[int, Any]]:
    """(row number, decoded row or a BadRow) in file order."""
    if format == "jsonl":
        yield from _jsonl_rows(path)
    elif format == "parquet":
        yield from _parquet_rows(path)
    else:
        yield from _arrow_rows(hf_disk_files(path))


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line)
            except json.JSONDecodeError as exc:
                yield line_no, BadRow(f"not JSON ({exc})")


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

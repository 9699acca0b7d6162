"""Why an engine start failed for good: what its log says that another start would meet again.

A start that fails because the engine died, a port was taken or the node ran short is retried
(grid/orchestrate/schedule.py). One that fails because vLLM refused what it was given is not: the
model folder is missing or incomplete (no weights, no tokenizer, a damaged weights file), an
argument vLLM does not know, or a configuration it rejects (max_model_len over the model's
context, a speculative method it lacks). Each is read from the engine's log: vLLM's own error line.
Only these known lines count; any other failure stays retryable (issue 45 item 6).
"""

from __future__ import annotations

import re
from pathlib import Path

# vLLM's prefix on each line of its log: "(APIServer pid=12) ERROR 12-06 23:43:19 [core.py:1510] ".
PREFIX = re.compile(r"^\((?:\w+ )*pid=\d+\) (?:[A-Z]+ \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]*\] )?", re.M)
# How much of a log's end is read: a start that failed writes a few hundred lines at most.
READ_BYTES = 512 * 1024
# A quoted message is cut to this many characters.
MAX_QUOTE = 300

# (vLLM's line, what it means): the first that matches names the refusal; {0} is the line's group 1.
MODEL_LINES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"Cannot find any model weights with `([^`]*)`"),
        "the model folder {0} holds no weights (no .safetensors, .bin or .gguf file)",
    ),
    (
        # transformers reads a local path that does not exist as a hub name, and refuses its form.
        re.compile(r"Repo id must be in the form '\w+' or '[\w/]+': '([^']*)'"),
        "the model {0} is not a folder on this node (a missing path, read as a hub name)",
    ),
    (
        re.compile(r"(\S+) is not a local folder and is not a valid model identifier"),
        "the model {0} is not a folder on this node nor a model on the hub",
    ),
    (
        re.compile(r"(\S+) does not appear to have a file named ([\w.\-]*\w)"),
        "the model folder {0} is incomplete (no {1})",  # {1} without the sentence's full stop
    ),
    (
        re.compile(r"Couldn't instantiate the backend tokenizer"),
        "the model folder has no usable tokenizer (tokenizer.json missing)",
    ),
    (
        re.compile(r"SafetensorError: (.+)"),
        "a weights file of the model is damaged ({0})",
    ),
    (
        # vLLM reads each .safetensors header itself before loading (transformers_utils/utils.py); a
        # damaged file fails there with what its first 8 bytes made of the header's length: MemoryError,
        # struct.error (a file under 8 bytes), a JSON or UTF-8 error (found by scripts/adversarial.py).
        re.compile(r"in parse_safetensors_file_metadata\n(?:[ \t].*\n)*(\w[\w.]*(?:Error|error)\b.*)"),
        "a weights file of the model is damaged (vLLM could not read its safetensors header: {0})",
    ),
)
# argparse's refusal of the command line: 'api_server.py: error: unrecognized arguments: --x 3'.
ARGUMENTS = re.compile(r"^[\w.\- ]+: error: (.+)$", re.M)
# A configuration vLLM rejects: pydantic's 'ValidationError: 1 validation error for ModelConfig'
# and the lines that say what (the field, then the message).
CONFIG = re.compile(r"ValidationError: \d+ validation errors? for (\w+)\n((?:[ \t]*\S.*(?:\n|$)){1,3})")


def quote(text: str) -> str:
    """One line, at most MAX_QUOTE characters."""
    line = " ".join(text.split())
    return line if len(line) <= MAX_QUOTE else line[: MAX_QUOTE - 3] + "..."


def refusal(log_text: str) -> str | None:
    """What in the log of an engine that did not start no retry gets past, in words; None when the
    log names no such cause (the engine died, hung, or failed for a reason not known here)."""
    text = PREFIX.sub("", log_text)
    for pattern, words in MODEL_LINES:
        if (found := pattern.search(text)) is not None:
            return words.format(*(quote(g or "") for g in found.groups()))
    if "usage: " in text and (found := ARGUMENTS.search(text)) is not None:
        said = quote(found.group(1))
        return f"vLLM refused its command line ({said}); fix engine.extra_args or the engine config"
    if (found := CONFIG.search(text)) is not None:
        return f"vLLM refused its configuration ({found.group(1)}: {config_words(found.group(2))})"
    return None


def config_words(lines: str) -> str:
    """pydantic's lines under 'validation error for X': 'Value error, <message>' for the whole
    config, or the field's name and then its message ('method: Input should be ...')."""
    said = [line.strip() for line in lines.splitlines() if line.strip()]
    said = [line for line in said if not line.startswith("For further information")]
    if not said or said[0].startswith("Value error, "):
        return quote(said[0].removeprefix("Value error, ") if said else "")
    return quote(": ".join(said[:2]))


def read_refusal(log_path: Path) -> str | None:
    """`refusal` of the log's end; None when the log cannot be read."""
    try:
        with log_path.open("rb") as handle:
            handle.seek(max(0, log_path.stat().st_size - READ_BYTES))
            return refusal(handle.read().decode(errors="replace"))
    except OSError:
        return None

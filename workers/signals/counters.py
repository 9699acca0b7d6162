"""The engine's Prometheus counters, scraped before and after a run and kept as deltas.

Parsing is prometheus-client's own text parser; samples are summed over
labels (one engine, one model), except spec-decode acceptance per draft position.
"""

from __future__ import annotations

import urllib.request
from dataclasses import asdict, dataclass, field, fields

from prometheus_client.parser import text_string_to_metric_families

# Counter families (without the `_total` suffix) -> ServerCounters field.
COUNTER_FAMILIES = {
    "vllm:generation_tokens": "generation_tokens",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:request_success": "requests_succeeded",
    "vllm:num_preemptions": "preemptions",
    "vllm:spec_decode_num_drafts": "spec_drafts",
    "vllm:spec_decode_num_draft_tokens": "spec_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "spec_accepted_tokens",
    "vllm:prefix_cache_hits": "prefix_cache_hits",
    "vllm:prefix_cache_queries": "prefix_cache_queries",
}
PER_POSITION_FAMILY = "vllm:spec_decode_num_accepted_tokens_per_pos"


@dataclass
class ServerCounters:
    """Cumulative server counters at one instant (or, after `minus`, a delta)."""

    generation_tokens: float = 0.0
    prompt_tokens: float = 0.0
    requests_succeeded: float = 0.0
    preemptions: float = 0.0
    spec_drafts: float = 0.0
    spec_draft_tokens: float = 0.0
    spec_accepted_tokens: float = 0.0
    prefix_cache_hits: float = 0.0
    prefix_cache_queries: float = 0.0
    # Accepted draft tokens by position in the draft (0 = first drafted token).
    spec_accepted_per_pos: list[float] = field(default_factory=list)

    def minus(self, before: ServerCounters) -> ServerCounters:
        delta = ServerCounters()
        for f in fields(self):
            if f.name == "spec_accepted_per_pos":
                continue
            setattr(delta, f.name, getattr(self, f.name) - getattr(before, f.name))
        old = before.spec_accepted_per_pos + [0.0] * len(self.spec_accepted_per_pos)
        delta.spec_accepted_per_pos = [a - b for a, b in zip(self.spec_accepted_per_pos, old, strict=False)]
        return delta

    def as_columns(self, prefix: str = "srv_") -> dict[str, object]:
        return {prefix + k: v for k, v in asdict(self).items()}


def parse_counters(text: str) -> ServerCounters:
    """ServerCounters from a Prometheus text exposition."""
    counters = ServerCounters()
    per_pos: dict[int, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == PER_POSITION_FAMILY:
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    pos = int(sample.labels.get("position", 0))
                    per_pos[pos] = per_pos.get(pos, 0.0) + sample.value
            continue
        attr = COUNTER_FAMILIES.get(family.name)
        if attr is None:
            continue
        total = sum(s.value for s in family.samples if s.name.endswith("_total"))
        setattr(counters, attr, total)
    counters.spec_accepted_per_pos = [per_pos[p] for p in sorted(per_pos)]
    return counters


def scrape(base_url: str, api_key: str, timeout_s: float = 10.0) -> ServerCounters:
    """GET /metrics and parse it."""
    request = urllib.request.Request(base_url + "/metrics", headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request, timeout=timeout_s) as resp:
        return parse_counters(resp.read().decode())

"""What one engine launch has been sent, so each cell can say which measured prompts were not new.

An engine remembers what it served: the prefix cache keeps prompts' KV blocks,
suffix decoding's global tree keeps earlier responses, and a greedy request
whose prompt was served before drafts its own previous answer. A measured
prompt must be new to its engine; where the user allowed repeats
(load.allow_repeats), every reuse is counted by where the engine saw it first.
Pure: the runner feeds it the prompts it sends, and the pre-launch audit
(grid/checks/prompt_audit.py) feeds it the same schedules without any engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workers.load.prompts import Prompt

WARMUP, MEASURE, PROBE = "warmup", "measure", "probe"


@dataclass(frozen=True)
class Reuse:
    """Measured requests of one cell whose prompt its engine had already been sent, by where."""

    in_warmup: int = 0
    # Earlier in the same cell's measured list (a cycled small corpus).
    in_cell: int = 0
    # By an earlier cell of another corpus on the same launch (e.g. `mix` after its sources).
    in_earlier_corpus: int = 0
    # By an earlier repeat of the same corpus on the same launch.
    in_earlier_repeat: int = 0

    @property
    def total(self) -> int:
        return self.in_warmup + self.in_cell + self.in_earlier_corpus + self.in_earlier_repeat

    def as_columns(self) -> dict[str, int]:
        return {
            "prompts_reused": self.total,
            "prompts_reused_warmup": self.in_warmup,
            "prompts_reused_in_cell": self.in_cell,
            "prompts_reused_earlier_corpus": self.in_earlier_corpus,
            "prompts_reused_earlier_repeat": self.in_earlier_repeat,
        }


@dataclass
class ServedPrompts:
    """Every prompt (by content) one engine launch was sent, with the (corpus, repeat) that sent it first."""

    first_sent_by: dict[str, tuple[str, int]] = field(default_factory=dict)

    def add(self, prompts: list[Prompt], corpus: str, repeat: int) -> None:
        for prompt in prompts:
            self.first_sent_by.setdefault(prompt.content_hash, (corpus, repeat))

    def measured_reuse(self, warmup: list[Prompt], measured: list[Prompt], corpus: str, repeat: int) -> Reuse:
        """How many of `measured` reuse a prompt sent before them; call before `add`ing this cell."""
        warm = {p.content_hash for p in warmup}
        in_cell: set[str] = set()
        counts = {"in_warmup": 0, "in_cell": 0, "in_earlier_corpus": 0, "in_earlier_repeat": 0}
        for prompt in measured:
            h = prompt.content_hash
            earlier = self.first_sent_by.get(h)
            if earlier is not None:
                counts["in_earlier_corpus" if earlier[0] != corpus else "in_earlier_repeat"] += 1
            elif h in warm:
                counts["in_warmup"] += 1
            elif h in in_cell:
                counts["in_cell"] += 1
            in_cell.add(h)
        return Reuse(**counts)

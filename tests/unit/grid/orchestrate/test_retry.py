"""The driver retries only what another attempt could get past (issue 45 item 6)."""

from __future__ import annotations

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.schedule import Launch, retry
from grid.plan.groups import group_by_engine
from workers.context import CellOutcome


def test_only_retryable_failures_go_back_on_the_queue_while_attempts_are_left():
    group = group_by_engine(expand(to_config(compose_config(["experiment=smoke", "grid.levers=[van]"]))))[0]
    died, changed = group.cells[:2]
    results = [
        CellOutcome(died.key, died.label, "a1", "failed", "engine died: EngineCore gone"),
        CellOutcome(changed.key, changed.label, "a2", "failed", "CorpusChanged: node n", retryable=False),
    ]
    again = retry(Launch(group, 1), results, max_attempts=2)
    assert again is not None and again.attempt == 2
    assert [c.key for c in again.group.cells] == [died.key]
    assert retry(again, results, max_attempts=2) is None  # no attempts left
    assert retry(Launch(group, 1), results[1:], max_attempts=3) is None  # nothing a retry could fix

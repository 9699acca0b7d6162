"""The run's closing line read by engine-level tests: every cell measured, none failed.

Whether a cell is VALID depends on the machine (a busy 2-core box starves the engine and the
concurrency gate fails), which tests about launches, retries and resume do not assert: they read
done + invalid (kept by run.keep_invalid) as the cells measured.

The line (grid/orchestrate/ledger.py: counts_words) counts cells and anchor runs apart:
'4 cells: done 3, invalid 1, failed 0, interrupted 0, pending 0; 2 anchor runs: done 2; skipped 0
(in the store) (attempts 6)'. Both are runs the tests count, as the line did before it split them.
"""

import re

CLOSING = re.compile(r"(\d+) cells?: ([^;\n]*)(?:; \d+ anchor runs?: ([^;\n]*))?")
STATE = re.compile(r"\b(done|invalid|failed|interrupted|pending) (\d+)")


def closing_counts(output: str) -> dict[str, int] | None:
    """The last closing line's counts by state, cells and anchor runs together; None without one."""
    found = CLOSING.findall(output)
    if not found:
        return None
    _, cells, anchors = found[-1]
    counts: dict[str, int] = {}
    for state, n in STATE.findall(cells) + STATE.findall(anchors or ""):
        counts[state] = counts.get(state, 0) + int(n)
    return counts


def measured_none_failed(output: str, cells: int) -> bool:
    """Whether the closing line says `cells` runs measured (VALID or INVALID) and none failed."""
    counts = closing_counts(output)
    if counts is None:
        return False
    return counts.get("failed", 0) == 0 and counts.get("done", 0) + counts.get("invalid", 0) == cells


def all_valid(output: str, cells: int) -> bool:
    """Whether the closing line says `cells` runs measured, every one VALID."""
    counts = closing_counts(output)
    return counts is not None and counts.get("done", 0) == cells and not counts.get("invalid", 0)

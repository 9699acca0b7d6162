"""The run's closing line read by engine-level tests: every cell measured, none failed.

Whether a cell is VALID depends on the machine (a busy 2-core box starves the engine and the
concurrency gate fails), which tests about launches, retries and resume do not assert: they read
done + invalid (kept by run.keep_invalid) as the cells measured.
"""

import re

CLOSING = re.compile(r"done (\d+), failed (\d+), invalid (\d+)")


def measured_none_failed(output: str, cells: int) -> bool:
    """Whether the closing line says `cells` cells measured (VALID or INVALID) and none failed."""
    found = CLOSING.findall(output)
    if not found:
        return False
    done, failed, invalid = map(int, found[-1])
    return failed == 0 and done + invalid == cells

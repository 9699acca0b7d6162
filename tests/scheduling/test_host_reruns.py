"""Issue 47 item 3 on the fake cluster: a cell INVALID only because the host was busy is measured
again by the run itself, on a fresh engine, bounded by run.host_invalid_reruns, and said in the log.

The stand-in for a busy host: the host gates at 0 (gates.max_loop_lag_ms, gates.max_engine_wait_share),
which a measured cell mostly exceeds (the stand-in's loop-lag p99 read 0.3-0.8 ms here, at times 0.0),
with the window, requests, concurrency and client CPU gates opened, so only a host gate fails. Which
cells fail first is the machine's; what the run does with each is checked cell by cell."""

from __future__ import annotations

import io

from rich.console import Console

from grid.orchestrate.run import run
from store.read import attempts, measured_valid
from tests.scheduling.conftest import stub_overrides
from tests.scheduling.test_faults import CELLS, ok_counts

BUSY = [
    "gates.max_loop_lag_ms=0",
    "gates.max_engine_wait_share=0",
    "gates.min_window_s=0",
    "gates.min_requests=0",
    "gates.min_concurrency_held=0",
    "gates.max_client_cpu_share=100",
    "grid.levers=[van]",
]


def first_verdicts(inputs) -> tuple[set[str], dict[str, int]]:
    """The cells whose first ok attempt was INVALID, and each cell's ok attempts."""
    found, _ = attempts(inputs / "store")
    ok = sorted((a for a in found if a.status == "ok"), key=lambda a: (a.written_at, a.attempt_id))
    first: dict[str, bool] = {}
    for attempt in ok:
        first.setdefault(attempt.cell_key, measured_valid(attempt))
    return {key for key, valid in first.items() if not valid}, ok_counts(inputs)


def busy_overrides(inputs, cluster, *extra):
    """The stand-in grid with INVALID cells measured again (conftest keeps them: run.keep_invalid=true)."""
    base = [o for o in stub_overrides(inputs, cluster, *BUSY) if o != "run.keep_invalid=true"]
    return [*base, *extra]


def test_a_busy_host_cell_is_measured_again_once_then_says_what_now(cluster, inputs, no_leaks):
    out = io.StringIO()
    code = run(busy_overrides(inputs, cluster), Console(file=out, width=400))
    text = out.getvalue()
    first_invalid, runs = first_verdicts(inputs)
    assert len(runs) == CELLS // 2, text  # van only
    # A cell INVALID at first is measured once again (run.host_invalid_reruns=1); a VALID one is not.
    assert runs == {key: 2 if key in first_invalid else 1 for key in runs}, text
    assert text.count("measuring again") == len(first_invalid), text
    if not first_invalid:
        return  # every first attempt passed (a quiet moment): nothing to measure again
    assert "rerun 1 of run.host_invalid_reruns=1" in text
    last = text.strip().splitlines()[-1]
    if code == 1:  # still INVALID after its rerun: the last line says what to do
        assert last.startswith("what now: ") and "the machine was busy" in last, text
    else:
        assert "what now" not in text, text


def test_no_rerun_where_invalid_cells_are_kept(cluster, inputs, no_leaks):
    out = io.StringIO()
    assert run(busy_overrides(inputs, cluster, "run.keep_invalid=true"), Console(file=out, width=400)) == 0
    assert sorted(ok_counts(inputs).values()) == [1] * (CELLS // 2), out.getvalue()
    assert "measuring again" not in out.getvalue()

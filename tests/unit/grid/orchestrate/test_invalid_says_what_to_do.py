"""Issue 47 item 3: INVALID says what to do. Each validity gate's reason names its fix, status shows
the reason (not a column name), a cell INVALID only because the host was busy (engine starved of
cores, event-loop lag) is measured again by the run itself, bounded and said in the log, and a run
left with INVALID cells ends on a line that says why it exits 1 and what to do next."""

import io
import types

import pytest
from rich.console import Console

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.run import busy_again_line, conclude
from grid.orchestrate.schedule import Launch, retry
from grid.orchestrate.stop import Stop
from grid.plan.groups import group_by_engine
from vocab.schema import GateConfig
from workers.runner import CellOutcome, RunContext
from workers.signals.gates import GateInputs, evaluate, host_bound

GOOD = GateInputs(
    window_s=60,
    requests_in_window=100,
    errors=0,
    server_running_mean=31.9,
    concurrency=32,
    client_cpu_share=0.05,
    loop_lag_p99_ms=2.0,
    client_output_tokens=1000,
    server_output_tokens=1000,
)
STARVED = {"engine_wait_share": 0.47}
LAGGING = {"loop_lag_p99_ms": 210.0}


@pytest.mark.parametrize(
    ("change", "fix"),
    [
        ({"window_s": 5}, "about 6.0x the measured prompts (++grid.num_prompts.<corpus>=N) or outputs 6.0x"),
        ({"window_s": None}, "measure more prompts than load.concurrency (32)"),
        ({"requests_in_window": 3}, "measure at least 29 more prompts"),
        ({"errors": 2}, "error_type and error_message"),
        ({"server_running_mean": 28.0}, "lower load.concurrency"),
        ({"client_cpu_share": 0.9}, "load.pin_cpus=auto"),
        (LAGGING, "rerun when it is quiet"),
        (STARVED, "run.keep_invalid=true"),
        ({"server_output_tokens": 1020}, "nothing else sends to it"),
        ({"requests_without_token_ids": 3}, "load.token_ids=true"),
        ({"stall_s": 40.0, "stall_limit_s": 2.0}, "then resume to measure the cell again"),
    ],
)
def test_each_gate_names_its_fix(change, fix):
    reasons = evaluate(GateInputs(**{**GOOD.__dict__, **change}), GateConfig())["invalid_reasons"]
    assert fix in reasons, reasons
    # The window advice still reads as the window's (grid/plan/window_fix.py window_short): no ';' in a fix.
    assert ";" not in reasons or reasons.startswith("engine stalled"), reasons  # the stall's own words


def test_starvation_says_the_machine_was_busy_and_every_way_out():
    reasons = evaluate(GateInputs(**{**GOOD.__dict__, **STARVED}), GateConfig())["invalid_reasons"]
    assert reasons.startswith("engine host threads starved: EngineCore waited for a core 47%"), reasons
    for words in (
        "the machine was busy",
        "rerun when it is quiet",
        "cores of its own",
        "run.keep_invalid=true",
    ):
        assert words in reasons, reasons


def test_only_host_gates_make_a_cell_host_bound():
    def columns(change):
        return evaluate(GateInputs(**{**GOOD.__dict__, **change}), GateConfig())

    assert host_bound(columns(STARVED)) and host_bound(columns(LAGGING))
    assert host_bound(columns({**STARVED, **LAGGING}))
    assert not host_bound(columns({}))  # VALID
    assert not host_bound(columns({"window_s": 5}))  # structural: measuring again would not help
    assert not host_bound(columns({**STARVED, "window_s": 5}))


def smoke(tmp_path, *extra):
    overrides = ["experiment=smoke", "grid.levers=[van]", "grid.anchor.enabled=false",
                 f"paths.store={tmp_path}", *extra]  # fmt: skip
    config = to_config(compose_config(overrides))
    return overrides, config, expand(config)


def starved(cell, busy=True):
    reasons = evaluate(GateInputs(**{**GOOD.__dict__, **STARVED}), GateConfig())["invalid_reasons"]
    return CellOutcome(cell.key, cell.label, "a", "ok", None, 30.0, 20.0, valid=False,
                       invalid_reasons=reasons, host_bound=busy)  # fmt: skip


def test_a_starved_cell_is_measured_again_at_once_bounded(tmp_path):
    _, _, cells = smoke(tmp_path)
    (group,) = group_by_engine(cells)
    first = Launch(group, 1)
    window = CellOutcome(cells[1].key, cells[1].label, "a", "ok", valid=False, invalid_reasons="window 2.1 s")
    again = retry(first, [starved(cells[0]), window], max_attempts=2, host_reruns=1)
    assert again is not None
    assert [c.key for c in again.group.cells] == [cells[0].key]  # the window's cell is not
    assert again.attempt == 1 and again.busy_reruns == {cells[0].key: 1}  # no failure used an attempt
    assert retry(again, [starved(cells[0])], max_attempts=2, host_reruns=1) is None  # bounded
    assert retry(first, [starved(cells[0])], max_attempts=2, host_reruns=0) is None  # 0: never


def test_the_log_says_it_measures_the_starved_cell_again():
    cell = types.SimpleNamespace(key="k", label="tiny/van/code_complete/r0")
    busy: dict[str, int] = {}
    line = busy_again_line(starved(cell), busy, 1)
    assert line is not None
    assert line.startswith(
        "[yellow]measuring again[/] tiny/van/code_complete/r0: INVALID because the host"
    ), line
    assert (
        "(engine host threads starved: EngineCore waited for a core 47% of its runnable time > 25%)" in line
    )
    assert "rerun 1 of run.host_invalid_reruns=1" in line
    assert busy_again_line(starved(cell), busy, 1) is None  # the rerun was INVALID too: kept
    assert busy_again_line(starved(cell, busy=False), {}, 1) is None


def test_a_run_left_invalid_ends_saying_why_it_exits_1_and_what_to_do(tmp_path):
    overrides, config, cells = smoke(tmp_path)
    out = io.StringIO()
    code = conclude(
        overrides, config, cells, cells, [group_by_engine(cells)],
        RunContext("s1", tmp_path, tmp_path, tmp_path, tmp_path), [starved(c) for c in cells], Stop(),
        types.SimpleNamespace(skipped={}), Console(file=out, width=400),
    )  # fmt: skip
    last = out.getvalue().strip().splitlines()[-1]
    assert code == 1
    assert last.startswith("what now: 2 cells left INVALID, so the exit code is 1 (not done); the machine"), (
        last
    )
    assert "measured again 1 time in this run" in last
    assert "run the same command again when it is quiet" in last and "run.keep_invalid=true" in last


def test_status_shows_the_reason_not_a_column_name(tmp_path):
    from grid.cli.status import status
    from tests.unit.grid.orchestrate.test_rerun_invalid import invalid_store

    overrides, _ = invalid_store(tmp_path, runs=1)
    out = io.StringIO()
    assert status(overrides, Console(file=out, width=400)) == 0
    text = out.getvalue()
    assert "INVALID: window 2.1 s < 10 s" in text, text
    assert "see invalid_reasons" not in text, text

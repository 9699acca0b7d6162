"""A cell's dynk columns from the plugin's cumulative lines at both ends of its window."""

import json
import threading
import time

from lever_plugins.controller import DynamicK
from lever_plugins.log_lines import dynk_line
from lever_plugins.pad_policy import PadStats
from lever_plugins.step_tally import StepTally
from workers.signals.dynk_log import (
    EMPTY_COLUMNS,
    columns,
    columns_since,
    columns_when_idle,
    parse_line,
    wait_for_idle_line,
    window_delta,
)

PREFIX = "(EngineCore pid=7) INFO 12-01 10:00:00 [dynk.py:120] "


def line(
    decisions: dict[int, int], drafts: dict[int, int], modes: dict[int, tuple[int, int, int]], idle: bool
) -> str:
    """A real plugin line with these cumulative counts; modes: K -> (full, piecewise, none)."""
    ctl = DynamicK(ks=(4, 6, 12), steps_by_k=decisions)
    tally = StepTally((4, 6, 12), drafts_by_k=drafts)
    for k, (full, piecewise, none) in modes.items():
        tally.modes_by_k[k] = {"full": full, "piecewise": piecewise, "none": none}
    return PREFIX + dynk_line(ctl, PadStats(), tally, idle=idle) + "\n"


# Warm-up (an idle line closes it), then the cell: a periodic line, then its idle flush.
WARMUP = line(
    {4: 10, 6: 0, 12: 5}, {4: 20, 6: 0, 12: 8}, {0: (0, 2, 0), 4: (0, 9, 1), 12: (4, 0, 0)}, idle=True
)
PERIODIC = line(
    {4: 30, 6: 5, 12: 5}, {4: 60, 6: 9, 12: 8}, {0: (0, 3, 0), 4: (0, 28, 1), 12: (4, 0, 0)}, idle=False
)
END = line(
    {4: 40, 6: 20, 12: 45},
    {4: 80, 6: 40, 12: 90},
    {0: (0, 4, 0), 4: (0, 38, 1), 6: (0, 19, 0), 12: (40, 2, 2)},
    idle=True,
)
LOG = "INFO lever_plugins dynk: wrapped vllm...propose\n" + WARMUP + "noise\n" + PERIODIC + END


def test_parse_round_trips_the_tally_and_skips_lines_without_counters():
    stats = parse_line(END)
    assert stats is not None and stats.idle
    assert stats.steps_by_k == {4: 40, 6: 20, 12: 45}
    assert stats.drafts_by_k == {4: 80, 6: 40, 12: 90}
    assert stats.modes_by_k[12] == {"full": 40, "piecewise": 2, "none": 2}
    assert stats.modes_by_k[0] == {"full": 0, "piecewise": 4, "none": 0}
    assert parse_line("INFO lever_plugins dynk: wrapped vllm.v1.spec_decode...propose") is None


def test_columns_are_the_difference_between_the_window_ends():
    before, after = parse_line(WARMUP), parse_line(END)
    assert after is not None
    cols = columns(before, after)
    assert json.loads(cols["dynk_steps_by_k_json"]) == {"4": 30, "6": 20, "12": 40}
    assert json.loads(cols["dynk_drafts_by_k_json"]) == {"4": 60, "6": 40, "12": 82}
    graphs = json.loads(cols["dynk_graph_steps_by_k_json"])
    assert graphs["12"] == {"full": 36, "piecewise": 2, "none": 2}
    assert graphs["4"] == {"full": 0, "piecewise": 29, "none": 0}
    assert graphs["0"] == {"full": 0, "piecewise": 2, "none": 0}
    assert cols["dynk_full_step_share"] == 36 / (2 + 29 + 19 + 40)
    assert cols["dynk_counts_exact"] is True
    # Against a periodic line the window may hold up to N steps that are not its own: said so.
    assert columns(parse_line(PERIODIC), after)["dynk_counts_exact"] is False
    assert window_delta(None, after) == after


def test_no_dynk_lines_give_empty_columns():
    assert columns(None, None) == EMPTY_COLUMNS
    assert set(EMPTY_COLUMNS) == set(columns(None, parse_line(END)))


def test_columns_since_reads_the_baseline_before_the_start_offset(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(LOG)
    start = len(LOG[: LOG.index("noise")].encode())
    cols = columns_since(log, start)
    assert json.loads(cols["dynk_steps_by_k_json"]) == {"4": 30, "6": 20, "12": 40}
    # An end offset before the idle flush: the periodic line is the total, and it is not exact.
    end = len(LOG[: LOG.index(END)].encode())
    assert json.loads(columns_since(log, start, end)["dynk_steps_by_k_json"]) == {"4": 20, "6": 5, "12": 0}
    assert columns_since(log, start, end)["dynk_counts_exact"] is False
    # From the engine's start (offset 0) there is no baseline: everything counts.
    assert json.loads(columns_since(log, 0)["dynk_steps_by_k_json"]) == {"4": 40, "6": 20, "12": 45}


def test_a_log_without_dynk_never_waits(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("INFO van engine\n" * 3)
    started = time.monotonic()
    assert wait_for_idle_line(log, timeout_s=5.0) == log.stat().st_size
    assert time.monotonic() - started < 1.0
    assert columns_when_idle(log, 0, timeout_s=5.0) == EMPTY_COLUMNS
    assert wait_for_idle_line(tmp_path / "missing.log", timeout_s=5.0) == 0


def test_waits_for_the_idle_flush_after_a_periodic_line(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(WARMUP + PERIODIC)
    start = len(WARMUP.encode())

    def flush_later() -> None:
        time.sleep(0.3)
        with log.open("a") as handle:
            handle.write(END + "INFO after\n")

    writer = threading.Thread(target=flush_later)
    writer.start()
    cols = columns_when_idle(log, start, timeout_s=5.0)
    writer.join()
    assert json.loads(cols["dynk_steps_by_k_json"]) == {"4": 30, "6": 20, "12": 40}
    assert cols["dynk_counts_exact"] is True


def test_gives_up_after_the_timeout_with_the_size_then(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(PERIODIC)
    assert wait_for_idle_line(log, timeout_s=0.3, poll_s=0.05) == log.stat().st_size

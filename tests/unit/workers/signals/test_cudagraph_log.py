import threading
import time

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.cell import logs_cudagraph_tables
from workers.signals.cudagraph_log import columns, columns_since, flush_timeout_s, step_counts, wait_for_table

LOG = """(EngineCore pid=7) INFO 11-30 07:00:00 [loggers.py:257] Avg generation throughput: 8000 tok/s
(EngineCore pid=7) INFO 11-30 07:00:00 [cuda_graph.py:123] **CUDAGraph Config Settings:**

- Mode: FULL_AND_PIECEWISE
- Capture sizes: [1, 2, 4, 8, 288]

**CUDAGraph Stats:**

| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |
|-----------------|---------------|--------------|--------------|-------|
| 288             | 288           | 0            | FULL         | 400   |
| 150             | 152           | 2            | PIECEWISE    | 90    |
| 5000            | 5000          | 0            | NONE         | 10    |
(EngineCore pid=7) INFO 11-30 07:00:10 [cuda_graph.py:123] | 288 | 288 | 0 | FULL | 100 |
"""


def test_steps_are_summed_per_mode_across_tables():
    assert step_counts(LOG) == {"FULL": 500, "PIECEWISE": 90, "NONE": 10}
    assert columns(step_counts(LOG))["cudagraph_full_share"] == 500 / 600


def test_no_tables_means_no_figures():
    assert columns(step_counts("INFO nothing here | not a row |"))["cudagraph_full_share"] is None


def test_only_what_the_log_gained_after_the_offset_counts(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(LOG)
    offset = LOG.index("(EngineCore pid=7) INFO 11-30 07:00:10")
    assert columns_since(log, offset)["cudagraph_full_steps"] == 100
    assert columns_since(tmp_path / "missing.log", 0)["cudagraph_full_steps"] is None


def test_a_cell_waits_for_the_table_that_flushes_its_steps(tmp_path):
    # The engine logs its table a moment after the cell's requests ended.
    log = tmp_path / "engine.log"
    log.write_text("INFO Avg generation throughput: 0 tok/s\n")
    start = log.stat().st_size

    def flush():
        time.sleep(0.3)
        with log.open("a") as handle:
            handle.write(LOG)

    writer = threading.Thread(target=flush)
    writer.start()
    began = time.monotonic()
    end = wait_for_table(log, start, timeout_s=5, poll_s=0.05)
    writer.join()
    assert 0.3 <= time.monotonic() - began < 5
    assert end == log.stat().st_size
    assert columns_since(log, start, end)["cudagraph_full_steps"] == 500
    # Bytes after `end` (the next cell's, or the probe's) are not counted.
    with log.open("a") as handle:
        handle.write("| 288 | 288 | 0 | FULL | 7 |\n")
    assert columns_since(log, start, end)["cudagraph_full_steps"] == 500


def test_without_a_table_the_wait_ends_at_its_timeout(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("INFO no tables: eager engine\n")
    began = time.monotonic()
    assert wait_for_table(log, 0, timeout_s=0.2, poll_s=0.05) == log.stat().st_size
    assert time.monotonic() - began < 1.0


def test_the_wait_for_a_table_follows_the_engines_stats_interval():
    # The H200 run of 2026-12-01 set VLLM_LOG_STATS_INTERVAL=1, yet each van cell still
    # waited 13 s twice for a table van never logs: the wait ignored the interval.
    assert flush_timeout_s({"VLLM_LOG_STATS_INTERVAL": "1"}) == 4.0
    assert flush_timeout_s({"VLLM_LOG_STATS_INTERVAL": "2.5"}) == 5.5
    # vLLM's default interval where the engine's environment does not set one, or sets nonsense.
    for env in ({}, {"VLLM_LOG_STATS_INTERVAL": "soon"}, {"VLLM_LOG_STATS_INTERVAL": "0"}):
        assert flush_timeout_s(env) == 13.0


def test_only_launches_with_the_metrics_flag_wait_for_tables():
    def spec(*overrides):
        return group_by_engine(expand(to_config(compose_config(list(overrides)))))[0].spec

    assert logs_cudagraph_tables(spec("experiment=gpu_validate"))
    assert not logs_cudagraph_tables(spec("experiment=smoke"))  # CPU: eager, no tables

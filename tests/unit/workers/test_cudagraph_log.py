from workers.cudagraph_log import columns, columns_since, step_counts

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

import pandas as pd
import pytest

from analysis.clean import reused_note, split_reused
from analysis.gpu_time import share_line, window_share


def test_cells_that_reused_prompts_are_left_out_and_counted():
    cells = pd.DataFrame({"lever": ["van", "suffix", "suffix"], "prompts_reused": [0, 12, None]})
    kept, left_out = split_reused(cells)
    assert list(kept["lever"]) == ["van", "suffix"] and left_out == 1
    assert "1 cells measured with repeated prompts" in reused_note(left_out)
    assert split_reused(cells, include_reused=True)[1] == 0
    assert split_reused(pd.DataFrame({"lever": ["van"]}))[1] == 0  # stored before the count existed


def test_window_share_weights_by_gpus_and_counts_engine_starts():
    cells = pd.DataFrame(
        {
            "window_s": [30.0, 10.0],
            "phase_cell_s": [50.0, 20.0],
            "phase_measure_s": [40.0, 15.0],
            "engine_start_share_s": [50.0, 0.0],
            "gpus": [1, 4],
        }
    )
    share = window_share(cells)
    assert share["gpu_s"] == pytest.approx(100 + 80)
    assert share["window_share"] == pytest.approx((30 + 40) / 180)
    assert "GPU time inside measurement windows: 39%" in share_line(cells)
    assert share_line(pd.DataFrame({"window_s": [1.0]})) is None


def test_cells_without_gpus_say_engine_time_not_gpu_time():
    cells = pd.DataFrame(
        {"window_s": [30.0], "phase_cell_s": [50.0], "engine_start_share_s": [50.0], "gpus": [1]}
    )
    cpu = cells.assign(cuda_visible_devices=[None], gpu_util_pct_mean=[None])
    assert share_line(cpu).startswith("Engine time inside measurement windows: 30% (30 of 100 engine-s")
    gpu = cells.assign(cuda_visible_devices=["0"], gpu_util_pct_mean=[80.0])
    assert share_line(gpu).startswith("GPU time inside measurement windows: 30% (30 of 100 GPU-s")

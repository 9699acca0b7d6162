import time

import pytest

from workers.phases import PhaseClock


def test_laps_add_up_to_the_cell_and_repeat_names_accumulate():
    clock = PhaseClock()
    time.sleep(0.02)
    clock.lap("warmup")
    time.sleep(0.01)
    clock.lap("measure")
    clock.lap("measure")
    cols = clock.columns()
    assert cols["phase_warmup_s"] >= 0.02
    assert cols["phase_measure_s"] >= 0.01
    assert cols["phase_cell_s"] == pytest.approx(cols["phase_warmup_s"] + cols["phase_measure_s"])

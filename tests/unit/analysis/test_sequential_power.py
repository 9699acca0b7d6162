"""Sequential looks keep a no-effect lever no more often than one fixed test (analysis/sequential_power.py,
through analysis.sequential and analysis.decision), and only because of the correction."""

from unittest import mock

import analysis.sequential
from analysis.sequential_power import design_row, false_keep
from analysis.simulated_sessions import NOISES
from experiments.procedure_power import STRESS


def test_the_corrected_looks_hold_the_false_keep_and_uncorrected_ones_do_not():
    # The null draws alone: design_row draws them first from the same seed, so its false_keep is this.
    assert false_keep(STRESS, 400, 5) <= 0.05
    with mock.patch.object(analysis.sequential, "pocock_confidence", lambda looks, confidence=0.9: 0.9):
        naive = false_keep(STRESS, 400, 5)
    assert naive > 0.05  # four looks at 90 % each: the rule's 5 % no longer holds


def test_false_keep_is_design_rows_null_draws():
    assert false_keep(NOISES[0], 60, 3) == design_row(NOISES[0], "sequential", 60, 3).false_keep


def test_a_clear_gain_stops_early_and_keeps_the_power():
    row = design_row(NOISES[0], "sequential", 150, 5)
    fixed_cap = design_row(NOISES[0], "fixed 12", 150, 5, n=12)
    assert row.power >= 0.9 and row.repeats_gain < 8 < fixed_cap.repeats_gain

from lever_plugins.controller import DynamicK
from lever_plugins.log_lines import dynk_line, kpad_line
from lever_plugins.pad_policy import PadStats
from workers.signals.dynk_log import last_stats, parse_line, parse_log


def test_dynk_line_round_trips_through_the_harness_parser():
    ctl = DynamicK(ks=(4, 6, 12))
    for _ in range(3):
        ctl.decide([(12, 12)], batch_size=2)
    line = dynk_line(ctl, PadStats(drafts=3, draft_tokens=30, padded_tokens=7, truncated_tokens=1))
    stats = parse_line("INFO 12-01 10:00:00 [dynk.py:90] " + line)
    assert stats is not None
    assert stats.plugin == "dynk"
    assert stats.steps == 3
    assert stats.steps_by_k == ctl.steps_by_k
    assert stats.values["draft_tokens"] == 30
    assert stats.values["padded_tokens"] == 7
    assert 0 < stats.values["p_accept"] < 1
    assert stats.values["batch"] == 2


def test_kpad_line_and_last_cumulative_line():
    first = kpad_line(1, 8, 0, PadStats(drafts=2, draft_tokens=16))
    last = kpad_line(200, 8, 0, PadStats(drafts=400, draft_tokens=3200, padded_tokens=900))
    text = "\n".join(["noise", "(EngineCore pid=1) INFO ... " + first, "other", last, ""])
    assert [s.steps for s in parse_log(text)] == [1, 200]
    stats = last_stats(text, "kpad")
    assert stats is not None
    assert stats.values["k"] == 8
    assert stats.values["draft_tokens"] == 3200
    assert last_stats(text, "dynk") is None
    assert parse_line("lever_plugins other: steps=1") is None

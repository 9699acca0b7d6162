import pandas as pd
import pytest

from analysis.best_k import at_best_k, best_k
from analysis.drift import session_drift


def drift_of(start, end, session="s1"):
    runs = pd.DataFrame(
        [{"session_id": session, "anchor": pos, "model": "m", "corpus": "mix", "lever": "van", "k": 0,
          "output_tok_per_s": v, "valid": True} for pos, v in (("start", start), ("end", end))]
    )  # fmt: skip
    return session_drift(runs)[0]


def medians(values, lever="bestkpad", corpus="mix", session="s1"):
    return pd.DataFrame(
        [{"model": "m", "corpus": corpus, "lever": lever, "k": k, "n": 1, "median": v, "mad": 0.0,
          "sessions": (session,)} for k, v in values.items()]
    )  # fmt: skip


def test_smaller_k_within_drift_of_the_top_wins():
    drift = drift_of(100.0, 102.0)  # band 2 / 101 = 1.98 %
    table = best_k(medians({4: 100.0, 6: 103.0, 8: 110.0, 12: 111.0}), drift)
    row = table.iloc[0]
    # 111/100 - 1 = 11 %, 111/103 - 1 = 7.8 % > band; 111/110 - 1 = 0.91 % <= band -> K=8
    assert (row["best_k"], row["best_tok_per_s"], row["compared_k"]) == (8, 110.0, 12)
    assert row["rule"] == "smaller K within drift of the top K"
    assert not row["beyond_drift"] and "within drift" in row["verdict"]
    assert row["rel_diff"] == pytest.approx(110 / 111 - 1)


def test_top_k_beyond_drift_is_kept_and_compared_with_runner_up():
    drift = drift_of(100.0, 100.5)  # band 0.5 / 100.25 = 0.50 %
    row = best_k(medians({4: 100.0, 8: 110.0, 12: 111.0}), drift).iloc[0]
    # 111/110 - 1 = 0.91 % > 0.50 %: K=12 stays, compared with the runner-up K=8
    assert (row["best_k"], row["compared_k"], row["rule"]) == (12, 8, "top K")
    assert row["beyond_drift"] and "beyond drift" in row["verdict"]


def test_without_anchor_runs_only_exact_ties_go_to_the_smaller_k():
    no_drift = drift_of(100.0, 100.0, session="other")  # s1 has no anchor: band unknown
    row = best_k(medians({4: 110.0, 8: 110.0, 12: 109.0}), no_drift).iloc[0]
    assert row["best_k"] == 4 and pd.isna(row["beyond_drift"])
    row = best_k(medians({4: 109.9, 8: 110.0}), no_drift).iloc[0]
    assert row["best_k"] == 8


def test_single_k_levers_are_not_swept_and_at_best_k_keeps_them():
    table = pd.concat([medians({8: 130.0}, lever="suffix"), medians({4: 1.0, 8: 2.0})], ignore_index=True)
    best = best_k(table, drift_of(100.0, 100.0))
    assert best["lever"].tolist() == ["bestkpad"]
    reduced = at_best_k(table, best)
    assert sorted(zip(reduced["lever"], reduced["k"], strict=True)) == [("bestkpad", 8), ("suffix", 8)]

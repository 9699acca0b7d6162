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


SPREAD = (1 / 1.005, 1.0, 1.005)  # every K's three repeats: paired log ratios with SD 0


def medians(values, lever="bestkpad", corpus="mix", session="s1", spreads=None):
    """values: {K: geometric mean over three repeats}; spreads: {K: factors per repeat} (default SPREAD)."""
    spreads = spreads or {}
    return pd.DataFrame(
        [{"model": "m", "corpus": corpus, "lever": lever, "k": k, "n": 3, "median": v, "mad": 0.0,
          "sessions": (session,),
          "repeats": tuple((session, r, v * f) for r, f in enumerate(spreads.get(k, SPREAD)))}
         for k, v in values.items()]
    )  # fmt: skip


def test_smaller_k_within_drift_of_the_top_wins():
    drift = drift_of(100.0, 102.0)  # band |ln 1.02| = 1.98 %
    table = best_k(medians({4: 100.0, 6: 103.0, 8: 110.0, 12: 111.0}), drift)
    row = table.iloc[0]
    # 111/100 - 1 = 11 %, 111/103 - 1 = 7.8 %: real gains; 111/110 - 1 = 0.91 % within the band -> K=8
    assert (row["best_k"], row["best_tok_per_s"], row["compared_k"]) == (8, 110.0, 12)
    assert row["rule"] == "smaller K: the top K is no real gain over it"
    assert not row["beyond_drift"] and row["label"] == "within noise" and "within noise" in row["verdict"]
    assert row["rel_diff"] == pytest.approx(110 / 111 - 1)
    assert (row["n_value"], row["n_reference"]) == (3, 3)


def test_a_noisy_top_k_is_no_real_gain_and_the_tie_goes_to_the_smaller_k():
    drift = drift_of(100.0, 100.5)  # band 0.50 %
    noisy = {12: (0.9, 1.0, 1.1)}
    row = best_k(medians({4: 100.0, 8: 110.0, 12: 118.0}, spreads=noisy), drift).iloc[0]
    # K12 (the top) is +18 % over K4 and +7 % over K8 at its point estimates, but its repeats
    # spread +-10 %: both intervals reach below 1, so the smallest K over which the top is no
    # real gain is K4
    assert (row["best_k"], row["compared_k"]) == (4, 12)
    assert row["label"] == "within noise" and row["ci_hi"] - 1 > -0.005  # K4 / K12: not below the band


def test_top_k_beyond_drift_is_kept_and_compared_with_runner_up():
    drift = drift_of(100.0, 100.5)  # band |ln 1.005| = 0.50 %
    row = best_k(medians({4: 100.0, 8: 110.0, 12: 111.0}), drift).iloc[0]
    # 111/110 - 1 = 0.91 % > 0.50 % with an interval of width 0: K=12 stays, compared with K=8
    assert (row["best_k"], row["compared_k"], row["rule"]) == (12, 8, "top K")
    assert row["beyond_drift"] and row["label"] == "real gain" and "real gain" in row["verdict"]


def test_without_anchor_runs_nothing_is_judged_and_the_smaller_k_stays():
    no_drift = drift_of(100.0, 100.0, session="other")  # s1 has no anchor: band unknown
    row = best_k(medians({4: 110.0, 8: 110.0, 12: 109.0}), no_drift).iloc[0]
    assert row["best_k"] == 4 and pd.isna(row["drift_band_rel"])
    # Fail closed (issue 26): an interval of width 0 above 1 used to win K=8 with the band taken
    # as 0; with the drift unknown no gain is real, so the smaller K stays.
    row = best_k(medians({4: 100.0, 8: 130.0}), no_drift).iloc[0]
    assert row["best_k"] == 4 and row["label"] == "not judged (drift unknown)"


def test_single_repeats_are_not_judged_and_the_smallest_k_stays():
    one = medians({4: 100.0, 8: 150.0}, spreads={4: (1.0,), 8: (1.0,)})
    row = best_k(one, drift_of(100.0, 100.0)).iloc[0]
    assert row["best_k"] == 4 and row["label"] == "not judged (n<2)" and pd.isna(row["beyond_drift"])


def test_single_k_levers_are_not_swept_and_at_best_k_keeps_them():
    table = pd.concat([medians({8: 130.0}, lever="suffix"), medians({4: 1.0, 8: 2.0})], ignore_index=True)
    best = best_k(table, drift_of(100.0, 100.0))
    assert best["lever"].tolist() == ["bestkpad"]
    reduced = at_best_k(table, best)
    assert sorted(zip(reduced["lever"], reduced["k"], strict=True)) == [("bestkpad", 8), ("suffix", 8)]

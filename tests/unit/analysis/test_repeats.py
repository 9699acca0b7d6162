import pandas as pd

from analysis.repeats import aggregate_repeats, mad


def test_mad_is_median_of_absolute_deviations():
    assert mad(pd.Series([1.0, 2.0, 3.0, 4.0, 100.0])) == 1.0


def test_invalid_cells_are_excluded_and_counted():
    cells = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "corpus": ["c"] * 4,
            "lever": ["van"] * 4,
            "k": [0] * 4,
            "output_tok_per_s": [10.0, 12.0, 11.0, 50.0],
            "valid": [True, True, True, False],
        }
    )
    table, excluded = aggregate_repeats(cells)
    assert excluded == 1
    row = table.iloc[0]
    assert (row["n"], row["median"], row["mad"]) == (3, 11.0, 1.0)
    table_all, excluded_all = aggregate_repeats(cells, include_invalid=True)
    assert excluded_all == 0 and table_all.iloc[0]["n"] == 4

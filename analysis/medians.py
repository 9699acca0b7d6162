"""Per lever configuration (model x corpus x lever x K): median over VALID repeats, and the repeats. Pure."""

from __future__ import annotations

import math

import pandas as pd

from analysis.repeats import CELL_FIELDS, mad, valid_only

MEDIAN_COLUMNS = [*CELL_FIELDS, "n", "median", "mad", "sessions", "repeats"]


def lever_medians(measured: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, int]:
    """n, median and MAD of output_tok_per_s per (model, corpus, lever, k), and the sessions they ran in.

    As analysis.repeats.aggregate_repeats, plus `sessions` (sorted tuple of
    session ids) so that each comparison knows whose drift band applies, and
    `repeats`: the sorted tuple of per-repeat (session_id, repeat, tok/s) values
    that analysis.decision judges (paired by session and repeat). The second
    value is how many INVALID cells were left out.
    """
    if measured.empty:
        return pd.DataFrame(columns=MEDIAN_COLUMNS), 0
    kept, excluded = valid_only(measured, include_invalid)
    kept = kept[kept["output_tok_per_s"].notna()]
    if kept.empty:
        return pd.DataFrame(columns=MEDIAN_COLUMNS), excluded
    if "repeat" not in kept:
        kept = kept.assign(repeat=kept.groupby(CELL_FIELDS, dropna=False).cumcount())
    grouped = kept.groupby(CELL_FIELDS, dropna=False)
    table = grouped["output_tok_per_s"].agg(n="count", median="median", mad=mad)
    table["sessions"] = grouped["session_id"].agg(lambda s: tuple(sorted(set(s))))
    table["repeats"] = [repeat_values(group) for _, group in grouped]
    return table.reset_index()[MEDIAN_COLUMNS], excluded


def repeat_values(rows: pd.DataFrame) -> tuple[tuple[str, int, float], ...]:
    """The rows' (session_id, repeat, tok/s), sorted; the repeat is -1 where none was recorded.

    Where one engine launch holds several repeats (grid.launches_per_argv below grid.repeats, or
    repeats on one engine), its repeats are not independent draws: they share the launch's offset,
    and pairing them as such keeps a lever that does nothing far more often than the rule's 5 %
    (issue 44: 12-16 % at the H200's launch noise). Such rows are replaced by one value per launch,
    the geometric mean of its repeats (analysis.decision.launch_means' rule), keyed by the launch's
    first repeat: repeat r runs on launch r mod L (grid/config/expand.py: shared_blocks), so van's
    launch j and the lever's launch j share that key and pair. Every judge over these values then
    judges by launch (analysis.decision.judge_by_launch), with launches - 1 degrees of freedom.
    """
    repeats = rows["repeat"].fillna(-1).astype(int) if "repeat" in rows else pd.Series(-1, index=rows.index)
    tok_per_s = rows["output_tok_per_s"].astype(float)
    values = list(zip(rows["session_id"].astype(str), repeats, tok_per_s, strict=True))
    if "engine_launch_id" not in rows:
        return tuple(sorted(values))
    launch_ids = [None if pd.isna(x) else str(x) for x in rows["engine_launch_id"]]
    return launch_values(values, launch_ids)


def launch_values(
    values: list[tuple[str, int, float]], launch_ids: list[str | None]
) -> tuple[tuple[str, int, float], ...]:
    """repeat_values' rule over (session_id, repeat, tok/s) and each row's launch id (None: unknown,
    a launch of its own). Unchanged where no launch holds two repeats."""
    by_launch: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for n, ((session, repeat, value), launch) in enumerate(zip(values, launch_ids, strict=True)):
        key = (session, launch if launch is not None else f"row-{n}")
        by_launch.setdefault(key, []).append((repeat, value))
    if all(len({r for r, _ in held}) <= 1 for held in by_launch.values()):
        return tuple(sorted(values))
    per_session: dict[str, list[tuple[int, str, float]]] = {}
    for (session, launch), held in by_launch.items():
        logs = [math.log(v) for _, v in held if v > 0 and math.isfinite(v)]
        mean = math.exp(sum(logs) / len(logs)) if logs else math.nan
        per_session.setdefault(session, []).append((min(r for r, _ in held), launch, mean))
    out = []
    for session, launches in per_session.items():
        firsts = [first for first, _, _ in launches]
        # Two launches of one session that start at the same repeat (a layout the grid does not write):
        # they are numbered in order instead, so each keeps a key of its own.
        unique = len(set(firsts)) == len(firsts)
        for rank, (first, _, mean) in enumerate(sorted(launches)):
            out.append((session, first if unique else rank, mean))
    return tuple(sorted(out))


def sessions_of(rows: pd.DataFrame) -> set[str]:
    """Union of the `sessions` tuples of `rows`."""
    return {s for group in rows["sessions"] for s in group}

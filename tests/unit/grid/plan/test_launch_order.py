"""Van against a lever: their launches interleave (van, lever, lever, van, ...) so the launches a
comparison pairs run next to each other and a slow drift cancels over the pairs (issue 37 item 2)."""

import itertools

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.cost import launch_order
from grid.plan.groups import group_by_engine


def order_of(*overrides: str, lever: str = "suffix") -> list[tuple[str, int]]:
    """(kind, first repeat) of van's launches and those holding `lever`, in the order the run starts
    them; kind 'van' or 'lever' (the other levers' launches, e.g. bestkpad's K sweep, left out)."""
    cfg = to_config(compose_config(["experiment=smoke", *overrides]))
    groups = launch_order(group_by_engine(expand(cfg)), cfg.plan)
    out = []
    for g in groups:
        cells = [c for c in g.cells if not c.replicate]
        names = {c.engine_spec.lever.name for c in cells}
        if names == {"van"}:
            out.append(("van", cells[0].repeat))
        elif lever in names:
            out.append(("lever", cells[0].repeat))
    return out


def abba(kinds: list[str]) -> bool:
    """Each adjacent pair of launches holds one van and one lever, and the pairs alternate AB, BA."""
    pairs = [tuple(kinds[i : i + 2]) for i in range(0, len(kinds) - 1, 2)]
    mixed = all(set(p) == {"van", "lever"} for p in pairs)
    return mixed and all(a != b for a, b in itertools.pairwise(pairs))


def test_shared_launches_of_several_levers_interleave_with_vans():
    # The shared launch of suffix and bestkpad K=8 holds 2 levers' blocks, van's 1: longer. Longest-first
    # put every lever launch before every van launch: van and the levers at opposite ends of the session.
    order = order_of(
        "grid.levers=[van,suffix,bestkpad]", "grid.engine_reuse=shared", "grid.repeats=8",
        "grid.launches_per_argv=4", "grid.corpora=[code_complete]",
    )  # fmt: skip
    kinds = [k for k, _ in order]
    assert kinds == ["van", "lever", "lever", "van", "van", "lever", "lever", "van"]
    assert abba(kinds)


def test_launches_of_one_spec_per_repeat_alternate_by_repeat():
    order = order_of("grid.levers=[van,suffix]", "grid.repeats=4", "grid.corpora=[code_complete]")
    assert [k for k, _ in order] == ["van", "lever", "lever", "van", "van", "lever", "lever", "van"]
    assert [r for _, r in order] == [0, 0, 1, 1, 2, 2, 3, 3]  # each pair one repeat: adjacent launches

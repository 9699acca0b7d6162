"""grid/orchestrate/sequential.py: after a look, only the undecided comparisons get the next look's
repeats."""

from rich.console import Console

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.orchestrate.sequential import at_cap, look_overrides, pending, run_sequential
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_anchor, write_cell

SESSION = "20260101T000000Z-aaaaaa"
# code_complete: suffix 1.5x every repeat (decided at the first look); chat_bench: 0.95-1.15 (undecided).
SUFFIX = {"code_complete": (150.0, 151.0), "chat_bench": (95.0, 115.0)}


def overrides(store):
    return [
        "experiment=smoke",
        f"paths.store={store}",
        "grid.sequential.enabled=true",
        "grid.sequential.looks=[2,4]",
    ]


def write_first_look(store):
    layout = StoreLayout(store)
    cells = [c for c in expand(at_cap(overrides(store))) if c.repeat < 2]
    for n, cell in enumerate(cells):
        lever, corpus = cell.engine_spec.lever.name, cell.corpus.name
        tok_s = 100.0 if lever == "van" else SUFFIX[corpus][cell.repeat]
        summary = {"model": "tiny", "corpus": corpus, "lever": lever, "k": cell.engine_spec.k}
        write_cell(layout, SESSION, n, cell.key, summary | {"repeat": cell.repeat, "output_tok_per_s": tok_s})
    for n, (position, tok_s) in enumerate((("start", 100.0), ("end", 100.5)), start=100):
        write_anchor(layout, SESSION, n, position, tok_s, model="tiny", corpus="code_complete")


def test_only_the_undecided_comparison_gets_the_next_look(tmp_path):
    write_first_look(tmp_path)
    todo = pending(overrides(tmp_path))
    assert set(todo) == {"tiny"}
    assert todo["tiny"].levers == {"suffix": {8}} and todo["tiny"].corpora == {"chat_bench"}
    assert todo["tiny"].repeats == 4
    argv = look_overrides(overrides(tmp_path), "tiny", todo["tiny"])
    cfg = to_config(compose_config(argv))
    assert (
        cfg.grid.corpora == ["chat_bench"] and cfg.grid.levers == ["van", "suffix"] and cfg.grid.repeats == 4
    )
    assert not cfg.grid.sequential.enabled


def test_the_driver_runs_the_first_look_then_only_what_is_pending(tmp_path):
    ran = []

    def fake_run(argv):
        ran.append(argv)
        if len(ran) == 1:
            write_first_look(tmp_path)  # what the first look's grid run would have measured
        return 0

    assert run_sequential(overrides(tmp_path), Console(quiet=True), fake_run) == 0
    assert len(ran) == 2
    assert "grid.repeats=2" in ran[0] and "grid.sequential.enabled=false" in ran[0]
    assert "grid.corpora=[chat_bench]" in ran[1] and "grid.repeats=4" in ran[1]


def test_a_failed_look_stops_the_driver_with_its_code(tmp_path):
    ran = []
    code = run_sequential(overrides(tmp_path), Console(quiet=True),
                          lambda argv: ran.append(argv) or 1)  # fmt: skip
    assert code == 1 and len(ran) == 1


def test_plan_prices_the_looks_between_fixed_repeats_and_the_cap(tmp_path):
    from grid.cli.plan_report import sequential_cost

    cost = sequential_cost(
        [*overrides(tmp_path), "grid.sequential.looks=[2,3,5]", "grid.repeats=2"], draws=30
    )
    assert cost["fixed_gpu_hours"] < cost["cap_gpu_hours"]
    for scenario in ("no_effect", "gain_10"):
        assert 2 <= cost[scenario]["mean_repeats"] <= 5
        assert cost["fixed_gpu_hours"] <= cost[scenario]["gpu_hours"]

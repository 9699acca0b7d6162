"""Issue 29 item 6: plan prices each model at the engine start and rate the store measured."""

from grid.cli.plan_report import plan_summary
from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_cell

SMOKE = ["experiment=smoke", "grid.anchor.enabled=false"]


def bundle(summary, model="tiny"):
    return next(b for b in summary["bundles"] if b["model"] == model)


def test_measured_start_and_rate_replace_the_defaults(tmp_path):
    layout = StoreLayout(tmp_path)
    for n, (ready_s, tok_s, valid) in enumerate(
        [(40.0, 50.0, True), (44.0, 70.0, True), (400.0, 1.0, False)]
    ):
        summary = {"model": "tiny", "corpus": "chat_bench", "lever": "van", "k": 0, "repeat": n,
                   "output_tok_per_s": tok_s, "engine_ready_s": ready_s}  # fmt: skip
        # An INVALID cell's figures are not the engine's: left out.
        write_cell(layout, "s1", n, f"c{n}", summary if valid else {**summary, "valid": False})
    default = bundle(plan_summary([*SMOKE, f"paths.store={tmp_path / 'empty'}"]))
    measured = bundle(plan_summary([*SMOKE, f"paths.store={tmp_path}"]))
    assert measured["engine_start_s"] == 42.0 and measured["start_source"] == "measured in the store"
    assert measured["rate_tok_per_s"] == 60.0 and measured["rate_source"] == "measured in the store"
    assert default["engine_start_s"] == 180.0 and default["rate_source"] != "measured in the store"
    assert measured["gpu_hours"] != default["gpu_hours"]
    ignored = bundle(plan_summary([*SMOKE, f"paths.store={tmp_path}", "plan.from_store=false"]))
    assert ignored["engine_start_s"] == 180.0 and ignored["rate_tok_per_s"] == default["rate_tok_per_s"]
    # plan.rates still wins over a measured rate.
    override = bundle(plan_summary([*SMOKE, f"paths.store={tmp_path}", "+plan.rates.tiny=5"]))
    assert override["rate_tok_per_s"] == 5.0 and override["rate_source"] == "plan.rates override"

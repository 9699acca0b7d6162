import json
import subprocess
import sys

import pytest

from grid.cli.plan_report import plan, plan_summary
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.cost import group_cost
from grid.plan.groups import group_by_engine
from vocab.errors import ConfigError


def test_final_plan_json_via_the_cli():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "grid",
            "plan",
            "experiment=final",
            "grid.engine_reuse=per_spec",
            "grid.own_engine_corpora=[]",
            "grid.repeats=1",
            "gates.equivalence.van_replicate=false",
            "format=json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(out.stdout)
    # Every launch serves the 8 corpora, but the drift anchor's two (one cell each).
    assert summary["anchor_launches"] == 2
    assert summary["cells"] == 8 * (summary["engine_launches"] - 2)
    gpus = {b["model"]: b["gpus"] for b in summary["bundles"]}
    assert len(gpus) == 11
    assert gpus["llama31_405b_fp8"] == 8 and gpus["deepseek_r1"] == 8
    assert gpus["llama31_8b"] == 1


def test_engine_launches_equal_engine_specs_not_cells():
    shared = [
        "experiment=final",
        "grid.engine_reuse=per_spec",
        "grid.own_engine_corpora=[]",
        "grid.repeats=1",
    ]
    shared.append("gates.equivalence.van_replicate=false")  # replicates run on launches of their own
    summary = plan_summary(shared)
    cells = expand(to_config(compose_config(shared)))
    specs = len({c.engine_spec.key for c in cells})
    assert specs < len(cells)
    assert summary["engine_launches"] == specs + summary["anchor_launches"] == specs + 2


def test_gpu_hours_follow_the_stated_cost_model():
    config = to_config(
        compose_config(
            ["experiment=smoke", "+plan.rates.tiny=10", "plan.engine_start_s=100", "plan.output_fill=1.0"]
        )
    )
    group = group_by_engine(expand(config))[0]
    cost = group_cost(group, config.plan)
    # Each cell at its own load (smoke sizes chat_bench apart: grid.num_prompts).
    tokens = sum((c.load.num_prompts + c.load.warmup_requests) * c.load.max_tokens for c in group.cells)
    assert cost.rate_source == "plan.rates override"
    assert cost.wall_s == pytest.approx(100 + tokens / 10)
    assert cost.gpu_s == cost.wall_s  # tp 1


def test_unknown_format_is_an_error():
    with pytest.raises(ConfigError, match="format must be table or json"):
        plan(["format=xml"])


def test_final_plan_reports_prompts_per_corpus_and_no_repeats():
    """Read from the corpora `make assets` builds at the study's cap: every corpus has room for its cells.

    The CPU demo's corpora (cap 2048 - 64) hold 502 code_edit and 306 summarize prompts, fewer than the
    study sends; `final` reads the ones built at its own cap (.cache/data/study).
    """
    summary = plan_summary(["experiment=final"])
    rows = summary["corpora"]
    if errors := [r["error"] for r in rows if r.get("error")]:
        pytest.skip(f"study corpora not built (make assets): {errors[0]}")
    assert {r["corpus"] for r in rows} == {
        "chat", "chat_bench", "code_complete", "code_edit", "summarize", "rag_qa", "agentic", "mix"
    }  # fmt: skip
    by_corpus = {r["corpus"]: r for r in rows}
    # The study's sizing: chat_bench's 110 prompts give 64 warm-up + 46 measured.
    assert by_corpus["chat_bench"]["measured"] == 46
    for row in rows:
        assert row["distinct_prompts"] >= row["warmup"] + row["measured"], row
        assert row["prompts_reused"] == 0, row
    # Every corpus but the two sized ones measures the study's full 512.
    assert {r["corpus"] for r in rows if r["measured"] < 512} == {"chat_bench", "summarize"}


def test_plan_prices_the_same_cells_under_every_engine_reuse_mode():
    """Issue 29 item 6: launches, GPU-hours and the measured share for auto, per_spec and shared."""
    from grid.cli.plan_report import reuse_modes

    rows = {r["engine_reuse"]: r for r in reuse_modes(["experiment=final", "grid.repeats=2"])}
    assert list(rows) == ["auto", "per_spec", "shared"]
    launches = [rows[m]["engine_launches"] for m in rows]
    assert launches[0] > launches[1] > launches[2]
    # Fewer starts: less GPU time, more of it inside measured loads.
    assert rows["shared"]["gpu_hours"] < rows["per_spec"]["gpu_hours"] < rows["auto"]["gpu_hours"]
    shares = [rows[m]["measured_share"] for m in rows]
    assert 0 < shares[0] < shares[1] < shares[2] < 1

"""Issue 44 item 1: load.warmup_ignore_eos runs the warm-up to max_tokens (two full waves with
warmup_requests = 2 x concurrency), the measured load keeping its own ignore_eos; grid plan prices it."""

import dataclasses

from grid.cli.plan_report import plan_summary
from tests.unit.workers.load.test_client import PROMPTS
from vocab.schema import LoadSpec
from workers.load.client import Target, request_body, warmup_load

TARGET = Target("http://x", "key", "m", "completions")


def test_the_warm_up_is_sent_with_ignore_eos_only_where_asked_and_the_measured_load_never_is():
    full = LoadSpec(warmup_ignore_eos=True, max_tokens=64)
    assert request_body(TARGET, PROMPTS[0], warmup_load(full))["ignore_eos"] is True
    assert "ignore_eos" not in request_body(TARGET, PROMPTS[0], full)  # the measured load's body
    assert "ignore_eos" not in request_body(TARGET, PROMPTS[0], warmup_load(LoadSpec()))
    # Nothing else of the load changes: same prompts in flight, same max_tokens and sampling.
    assert dataclasses.replace(warmup_load(full), ignore_eos=False) == full
    # A measured load that ignores EOS already keeps doing so whether or not the warm-up runs full.
    assert warmup_load(LoadSpec(ignore_eos=True)).ignore_eos


def test_grid_plan_prices_a_full_length_warm_up_at_max_tokens():
    base = [
        "experiment=smoke",
        "grid.anchor.enabled=false",
        "plan.from_store=false",
        "load.warmup_requests=64",
    ]
    stops = plan_summary(base)
    full = plan_summary([*base, "load.warmup_ignore_eos=true"])
    assert full["gpu_hours"] > stops["gpu_hours"]

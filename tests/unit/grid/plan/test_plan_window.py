"""Issue 47 item 6: `grid plan` warns when a corpus's prompts cannot fill the window at the
expected rate, and prints the override that would."""

from __future__ import annotations

import re

from grid.__main__ import main
from grid.config.compose import compose_config
from grid.config.expand import to_config
from vocab.paths import project_path


def test_a_small_own_trace_is_warned_with_the_override_that_fills_it(tmp_path, capsys):
    trace = tmp_path / "mine.jsonl"
    trace.write_text(project_path("examples/support_trace.jsonl").read_text())
    given = ["experiment=smoke", "grid.levers=[van]", "grid.corpora=[mine]", f"+corpus.mine.path={trace}",
             "load.num_prompts=12", "grid.anchor.enabled=false", "+plan.rates.tiny=40",
             "plan.from_store=false"]  # fmt: skip
    assert main(["plan", *given, f"paths.store={tmp_path / 'store'}"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "corpus 'mine': " in out and "so its cells would be INVALID" in out, out
    (override,) = re.findall(r"fix: (\+\+grid\.num_prompts\.mine=\d+)", out)
    assert to_config(compose_config([*given, override])).grid.num_prompts["mine"] > 12

"""Issue 38 item 2: plan's advice on a small own trace is an override Hydra takes as written."""

import re

from grid.__main__ import main
from grid.config.compose import compose_config
from grid.config.expand import to_config
from vocab.paths import project_path


def test_the_too_few_prompts_advice_composes(tmp_path, capsys):
    trace = tmp_path / "mychat.jsonl"
    rows = project_path("examples/support_trace.jsonl").read_text().splitlines()[:20]
    trace.write_text("\n".join(rows) + "\n")
    given = ["experiment=smoke", "grid.levers=[van]", "grid.corpora=[mychat]", f"+corpus.mychat.path={trace}"]
    assert main(["plan", *given, f"paths.store={tmp_path / 'store'}"]) == 0
    out = capsys.readouterr().out
    (advice,) = re.findall(r"set (\S*grid\.num_prompts\.mychat=\d+)", " ".join(out.split()))
    assert advice == "++grid.num_prompts.mychat=16", out  # 20 distinct - 4 warm-up
    # It composes as written (`grid.num_prompts.mychat=16` did not: the key is not in the config).
    assert to_config(compose_config([*given, advice])).grid.num_prompts == {"chat_bench": 40, "mychat": 16}

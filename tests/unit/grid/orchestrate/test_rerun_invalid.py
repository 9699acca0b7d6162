"""Issue 38 item 2: a rerun of INVALID cells says, before any launch, what it will measure again and
why, the header counts INVALID cells honestly, and status says when the reruns are used up."""

import io

import pytest
from rich.console import Console

import grid.orchestrate.run
from grid.cli.status import status
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from store.layout import StoreLayout
from store.writer import write_ok_attempt
from vocab.paths import project_path


class Launched(Exception):
    pass


def invalid_store(tmp_path, runs: int):
    trace = tmp_path / "mychat.jsonl"
    trace.write_text(
        "\n".join(project_path("examples/support_trace.jsonl").read_text().splitlines()[:20]) + "\n"
    )
    overrides = ["experiment=smoke", "grid.levers=[van]", "grid.anchor.enabled=false",
                 "grid.corpora=[mychat]", f"+corpus.mychat.path={trace}", "++grid.num_prompts.mychat=16",
                 f"paths.store={tmp_path / 'store'}"]  # fmt: skip
    (cell,) = expand(to_config(compose_config(overrides)))
    summary = {**cell.as_record(), "valid": False, "invalid_reasons": "window 2.1 s < 10 s",
               "window_s": 2.1, "output_tok_per_s": 240.0, "output_tokens": 16 * 30, "n_ok": 16}  # fmt: skip
    for run in range(runs):
        tags = {"session_id": f"s{run}", "cell_key": cell.key, "attempt_id": f"s{run}-a"}
        write_ok_attempt(StoreLayout(tmp_path / "store"), tags, [], summary, label=cell.label)
    return overrides, cell


def test_a_rerun_says_what_it_will_do_before_a_launch(tmp_path, monkeypatch):
    overrides, cell = invalid_store(tmp_path, runs=1)

    def launch(*args, **kwargs):
        raise Launched

    monkeypatch.setattr(grid.orchestrate.run, "launch", launch)
    out = io.StringIO()
    with pytest.raises(Launched):
        grid.orchestrate.run.run(overrides, Console(file=out, width=400))
    text = out.getvalue()
    assert (
        f"again {cell.label}: INVALID in 1 earlier run (window 2.1 s < 10 s); measured again with the "
        "same load (rerun 1 of run.invalid_reruns=1), so likely INVALID again"
    ) in text, text
    # 20 distinct prompts, 4 warm-up: 16 at most; its ~30-token answers end before max_tokens 64.
    assert "fix: a larger corpus: corpus 'mychat' has 20 distinct prompts (16 measured at most" in text, text
    assert "1 of 1 cells to run (0 done in the store, 1 measured INVALID before, measured again)" in text, (
        text
    )
    assert text.index("again ") < text.index("session ")  # said before the launch


def test_status_says_when_the_reruns_are_used_up(tmp_path):
    overrides, _ = invalid_store(tmp_path, runs=2)
    out = io.StringIO()
    assert status(overrides, Console(file=out, width=300)) == 0
    text = out.getvalue()
    assert "invalid 1 (kept: INVALID in 2 runs, run.invalid_reruns=1 used up)" in text, text
    assert "measured again on resume)" not in text.split("damaged")[0], text


def test_a_kept_invalid_cell_names_the_override_that_measures_it_again(tmp_path, monkeypatch):
    overrides, cell = invalid_store(tmp_path, runs=2)  # the reruns are used up: kept, not launched
    monkeypatch.setattr(grid.orchestrate.run, "launch", lambda *args, **kwargs: [])
    out = io.StringIO()
    grid.orchestrate.run.run(overrides, Console(file=out, width=400))
    text = out.getvalue()
    # Rich read the hint's brackets as markup and printed 'then run.force=' with nothing after it.
    assert f"then run.force=[{cell.label}]" in text, text

"""Issue 38 item 6: a rerun with nothing pending after the corpus bytes changed warns (it exited 0
in silence: the corpus check runs on the corpora the launch reads, and nothing launched)."""

from grid.checks.preflight import check_before_launch
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from store.layout import StoreLayout
from store.writer import write_ok_attempt
from vocab.paths import project_path
from workers.load.prompts import content_sha256


def test_nothing_to_run_but_the_corpus_changed_is_a_warning(tmp_path):
    trace = tmp_path / "support.jsonl"
    trace.write_bytes(project_path("examples/support_trace.jsonl").read_bytes())
    overrides = ["experiment=smoke", "grid.levers=[van]", "grid.anchor.enabled=false",
                 "grid.corpora=[support]", f"+corpus.support.path={trace}",
                 f"paths.store={tmp_path / 'store'}"]  # fmt: skip
    config = to_config(compose_config(overrides))
    (cell,) = expand(config)
    measured = content_sha256(trace)
    summary = {**cell.as_record(), "valid": True, "output_tok_per_s": 30.0, "corpus_sha256": measured}
    write_ok_attempt(StoreLayout(tmp_path / "store"), {"session_id": "s1", "cell_key": cell.key,
                     "attempt_id": "s1-a"}, [], summary, label=cell.label)  # fmt: skip
    assert check_before_launch(config, [[]], kept=[cell]).warnings == []  # the same bytes: nothing to say
    trace.write_text(trace.read_text().replace("e", "E", 1))  # the trace edited since
    (line,) = check_before_launch(config, [[]], kept=[cell]).warnings
    assert line.startswith("nothing to run, but the corpus changed since it was measured: corpus 'support': "
                           f"1 done cell of this grid measured sha256 {measured[:16]}"), line  # fmt: skip

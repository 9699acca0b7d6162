"""The pre-launch audit replays each launch's schedules: no measured prompt may be old to its engine."""

import json
import re
from dataclasses import replace

from grid.checks.prompt_audit import audit_groups, corpus_rows, repeat_problems
from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from vocab.schema import CorpusSpec


def write_corpus(tmp_path, name, texts):
    (tmp_path / f"{name}.jsonl").write_text(
        "".join(json.dumps({"id": i, "prompt": t}) + "\n" for i, t in enumerate(texts))
    )
    return CorpusSpec(name=name, endpoint="completions", path=f"{name}.jsonl")


def groups_for(tmp_path, corpora, *overrides):
    # Every corpus at load.num_prompts (smoke sizes chat_bench for the demo's windows).
    argv = ["experiment=smoke", "grid.levers=[van]", "~grid.num_prompts.chat_bench", *overrides]
    cells = expand(to_config(compose_config(argv)))
    by_name = {c.name: c for c in corpora}
    # The smoke grid's two corpora, pointed at small files of our own.
    names = {"code_complete": corpora[0].name, "chat_bench": corpora[1].name}
    return group_by_engine([replace(c, corpus=by_name[names[c.corpus.name]]) for c in cells])


def test_disjoint_corpora_on_one_engine_audit_clean(tmp_path):
    a = write_corpus(tmp_path, "a", [f"a{i}" for i in range(40)])
    b = write_corpus(tmp_path, "b", [f"b{i}" for i in range(40)])
    audit = audit_groups(groups_for(tmp_path, [a, b], "grid.engine_reuse=per_spec"), tmp_path, probe_count=8)
    assert repeat_problems(audit) == []
    assert [row["prompts_reused"] for row in corpus_rows(audit)] == [0, 0]
    assert corpus_rows(audit)[0]["distinct_prompts"] == 40


def test_a_corpus_sharing_prompts_with_an_earlier_one_on_the_engine_stops_the_run(tmp_path):
    a = write_corpus(tmp_path, "a", [f"a{i}" for i in range(40)])
    mix = write_corpus(tmp_path, "mix", [f"a{i}" for i in range(20)] + [f"m{i}" for i in range(20)])
    audit = audit_groups(
        groups_for(tmp_path, [a, mix], "grid.engine_reuse=per_spec"), tmp_path, probe_count=8
    )
    reused = {row.corpus: row.reuse for row in audit}
    assert reused["a"].total == 0
    assert reused["mix"].in_earlier_corpus > 0
    assert any(
        re.search(r"tiny/van/mix/r0: \d+ of 25 measured prompts were already sent", p)
        for p in repeat_problems(audit)
    )
    # A fresh engine per corpus: the same corpora audit clean.
    assert (
        repeat_problems(
            audit_groups(groups_for(tmp_path, [a, mix], "grid.engine_reuse=per_corpus"), tmp_path, 8)
        )
        == []
    )
    # A shared launch resets the engine before every cell: one launch, and still nothing old to it.
    shared = groups_for(tmp_path, [a, mix], "grid.engine_reuse=shared")
    assert len(shared) == 1 and len(shared[0].cells) == 2
    assert repeat_problems(audit_groups(shared, tmp_path, 8)) == []


def test_a_corpus_too_small_is_named_with_its_size(tmp_path):
    a = write_corpus(tmp_path, "a", [f"a{i}" for i in range(40)])
    small = write_corpus(tmp_path, "small", [f"s{i}" for i in range(20)])
    audit = audit_groups(groups_for(tmp_path, [a, small]), tmp_path, probe_count=0)
    assert any(
        re.search(r"corpus 'small' has 20 distinct prompts but a cell sends 4 warm-up \+ 25", p)
        for p in repeat_problems(audit)
    )
    rows = {r["corpus"]: r for r in corpus_rows(audit)}
    assert rows["small"]["prompts_reused"] > 0  # what allow_repeats would measure

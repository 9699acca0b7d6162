"""Inputs that cannot run stop before launch, one line each, every problem at once.

Each test builds its own model folder (a word-level tokenizer, one token per
word) and corpora, so none needs `make assets`.
"""

import io
import json

import pytest
from rich.console import Console

import grid.orchestrate.run
from grid.cli.corpus_report import describe
from grid.cli.plan_report import plan_summary
from grid.config.compose import compose_config
from grid.config.expand import to_config
from vocab.errors import ConfigError
from vocab.schema import CorpusSpec

SMOKE_SENDS = 4 + 25  # warm-up + measured prompts of a smoke cell: a corpus of 29 is sent whole


def word_tokenizer(folder, words):
    """A tokenizer.json (one token per word or punctuation run) and a chat template, as a model folder has."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(sorted(set(words)))}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:"
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))


def write_rows(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def inputs(tmp_path):
    """tiny's folder with a tokenizer, and the smoke grid's two corpora, 29 prompts each (all sent)."""
    model = tmp_path / "models" / "SmolLM2-135M-Instruct"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"")  # preflight looks for a weights file
    word_tokenizer(model, ["def", "f", "x", "question", "word"])
    data = tmp_path / "data" / "corpora"
    write_rows(
        data / "code_complete.jsonl", [{"id": f"cc{i}", "prompt": f"def f{i} x"} for i in range(SMOKE_SENDS)]
    )
    write_rows(
        data / "chat_bench.jsonl",
        [
            {"id": f"cb{i}", "messages": [{"role": "user", "content": f"question {i}"}]}
            for i in range(SMOKE_SENDS)
        ],
    )
    return tmp_path


def overrides(root, *extra):
    return [
        "experiment=smoke",
        f"paths.models_dir={root / 'models'}",
        f"paths.data_dir={root / 'data'}",
        f"paths.cache_dir={root / 'cache'}",
        f"paths.store={root / 'store'}",
        # The small corpora below hold SMOKE_SENDS prompts: every corpus at load.num_prompts.
        "~grid.num_prompts.chat_bench",
        *extra,
    ]


def long_prompt_corpus(root, words, at=5):
    rows = [{"id": f"cc{i}", "prompt": f"def f{i} x"} for i in range(SMOKE_SENDS)]
    rows[at]["prompt"] = " ".join(["word"] * words)
    write_rows(root / "data" / "corpora" / "code_complete.jsonl", rows)


# --- 1. prompt + max_tokens over the context ----------------------------------------------------


def test_max_tokens_that_leave_no_room_stop_plan_and_run_with_one_line():
    with pytest.raises(
        ConfigError,
        match=r"load\.max_tokens 20,000 leaves no room for a prompt in engine\.max_model_len 16,384",
    ):
        plan_summary(["experiment=final", "load.max_tokens=20000"])
    with pytest.raises(
        ConfigError, match=r"raise engine\.max_model_len above 4,096 or lower load\.max_tokens below 2,048"
    ):
        plan_summary(["experiment=smoke", "load.max_tokens=4096"])


def test_a_prompt_too_long_for_the_context_is_counted_exactly_and_named(inputs):
    long_prompt_corpus(inputs, 3000)
    summary = plan_summary(overrides(inputs))
    lines = [w for w in summary["warnings"] if "do not fit" in w]
    assert len(lines) == 1
    line = lines[0]
    assert "corpus 'code_complete'" in line
    assert "1 of 29 prompts do not fit model 'tiny'" in line
    assert "prompt tokens + load.max_tokens 64 > engine.max_model_len 2,048" in line
    assert "1 of them sent by its cells" in line
    assert "the longest, 'cc5', has 3,000 tokens (counted with the tokenizer in" in line
    assert "raise engine.max_model_len to 3,064" in line
    assert "filter the trace to prompts of at most 1,984 tokens" in line
    assert {r["corpus"]: r["too_long"] for r in summary["corpora"]} == {"code_complete": 1, "chat_bench": 0}


def test_a_prompt_that_fits_exactly_is_not_counted(inputs):
    long_prompt_corpus(inputs, 2048 - 64)
    assert not [w for w in plan_summary(overrides(inputs))["warnings"] if "do not fit" in w]
    long_prompt_corpus(inputs, 2048 - 64 + 1)
    assert [w for w in plan_summary(overrides(inputs))["warnings"] if "1 of 29 prompts do not fit" in w]


def test_chat_prompts_are_counted_with_the_chat_template(inputs):
    rows = [
        {"id": f"cb{i}", "messages": [{"role": "user", "content": f"question {i}"}]}
        for i in range(SMOKE_SENDS)
    ]
    # "user: <words>\nassistant:" is the words plus 4 tokens (user, :, assistant, :).
    rows[2]["messages"][0]["content"] = " ".join(["word"] * (2048 - 64 - 4 + 1))
    write_rows(inputs / "data" / "corpora" / "chat_bench.jsonl", rows)
    line = next(w for w in plan_summary(overrides(inputs))["warnings"] if "do not fit" in w)
    assert "corpus 'chat_bench'" in line and "the longest, 'cb2', has 1,985 tokens" in line


def test_without_a_local_tokenizer_the_count_is_an_estimate_and_says_so(inputs):
    (inputs / "models" / "SmolLM2-135M-Instruct" / "tokenizer.json").unlink()
    long_prompt_corpus(inputs, 4000)  # "word " x 4000: 20,000 bytes, about 5,000 tokens
    line = next(w for w in plan_summary(overrides(inputs))["warnings"] if "do not fit" in w)
    assert "has about 5,000 tokens (estimated at 4 bytes a token: no tokenizer for model 'tiny'" in line


def test_too_long_prompts_no_cell_sends_are_counted_but_stop_nothing():
    from grid.checks.prompt_fit import corpus_fit
    from workers.load.prompts import Corpus, Prompt

    corpus = Corpus([Prompt("a", "short"), Prompt("b", "x" * 40_000)])
    fit = corpus_fit("c", corpus_path_stub(), corpus, "completions", ("tiny",), 2048, 64, set(), None, "why")
    assert fit.too_long == 1 and fit.sent_too_long == 0 and fit.problem() is None
    sent = {corpus.prompts[1].content_hash}
    fit = corpus_fit("c", corpus_path_stub(), corpus, "completions", ("tiny",), 2048, 64, sent, None, "why")
    assert "1 of 2 prompts do not fit" in fit.problem()


def corpus_path_stub():
    from pathlib import Path

    return Path("/nonexistent/c.jsonl")


# --- 2. models that cannot run on the chosen engine -----------------------------------------------


def test_every_model_whose_tp_the_cpu_engine_cannot_run_is_named():
    with pytest.raises(ConfigError) as caught:
        plan_summary(["experiment=smoke", "grid.models=[llama31_405b_fp8,tiny,llama31_70b]"])
    text = str(caught.value)
    assert text.startswith("2 problems stop `plan`:")
    assert (
        "model 'llama31_405b_fp8' needs 8 GPUs (tp 8) but engines here get none (ray.use_gpus=false" in text
    )
    assert "model 'llama31_70b' needs 2 GPUs (tp 2)" in text
    assert "'tiny'" not in text


def test_the_fit_failure_names_every_model_that_does_not_fit():
    with pytest.raises(ConfigError) as caught:
        plan_summary(["experiment=final", "cluster.nodes=[{count:2,gpus:4}]"])
    for model in ("k_exaone_236b", "llama31_405b_fp8", "deepseek_r1"):
        assert f"model '{model}' needs 8 GPUs on one node but the largest node of cluster" in str(
            caught.value
        )


def test_node_entries_with_count_0_are_left_out_of_the_fit_check():
    with pytest.raises(ConfigError, match=r"model 'llama31_405b_fp8' needs 8 GPUs on one node .* has 4"):
        plan_summary(["experiment=final", "cluster.nodes=[{count:0,gpus:8},{count:2,gpus:4}]"])
    with pytest.raises(ConfigError, match=r"every one has count 0, so it describes no node"):
        plan_summary(["experiment=final", "cluster.nodes=[{count:0,gpus:8}]"])


def test_a_hub_id_on_the_cpu_engine_is_named_unless_the_engines_cache_holds_it(inputs):
    summary = plan_summary(overrides(inputs, "grid.models=[llama31_8b]"))
    line = next(w for w in summary["warnings"] if "hub id" in w)
    assert line.startswith("model 'llama31_8b' names hub id 'meta-llama/Llama-3.1-8B-Instruct', but engines")
    assert "run offline (HF_HUB_OFFLINE=1) and it is not in their cache" in line
    # The fix it names works from the command line, with nothing in the checkout edited.
    assert "+model.llama31_8b.path=/that/folder" in line
    weights = inputs / "my-weights"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    fixed = plan_summary(overrides(inputs, "grid.models=[llama31_8b]", f"+model.llama31_8b.path={weights}"))
    assert not [w for w in fixed["warnings"] if "hub id" in w]
    snapshot = (
        inputs / "cache" / "hf" / "hub" / "models--meta-llama--Llama-3.1-8B-Instruct" / "snapshots" / "abc"
    )
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert not [
        w for w in plan_summary(overrides(inputs, "grid.models=[llama31_8b]"))["warnings"] if "hub id" in w
    ]


# --- 3. unreadable traces -------------------------------------------------------------------------


def test_a_binary_trace_is_one_line_beside_the_other_problems(inputs):
    (inputs / "data" / "corpora" / "chat_bench.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    long_prompt_corpus(inputs, 3000)
    warnings = plan_summary(overrides(inputs))["warnings"]
    assert any(w.startswith("corpus 'chat_bench': corpus file ") and "is binary" in w for w in warnings)
    assert any("corpus 'code_complete'" in w and "do not fit" in w for w in warnings)


def test_the_corpus_listing_marks_a_bad_trace_instead_of_crashing(tmp_path):
    (tmp_path / "bad.jsonl").write_bytes(bytes(range(256)))
    write_rows(tmp_path / "good.jsonl", [{"prompt": "a"}, {"prompt": "b"}])
    bad = describe(CorpusSpec(name="bad", path="bad.jsonl"), tmp_path)
    assert bad["state"].startswith("unreadable: corpus file") and "is binary" in bad["state"]
    assert describe(CorpusSpec(name="good", path="good.jsonl"), tmp_path)["prompts"] == 2


def test_plan_shows_bad_rows_skipped_and_stops_on_them_when_not_skipping(inputs):
    rows = [{"id": f"cc{i}", "prompt": f"def f{i} x"} for i in range(SMOKE_SENDS)] + [
        {"id": "bad", "prompt": ""}
    ]
    write_rows(inputs / "data" / "corpora" / "code_complete.jsonl", rows)
    strict = plan_summary(overrides(inputs))
    assert [r["corpus"] for r in strict["corpora"] if r.get("error")] == ["code_complete"]
    assert any(
        f"code_complete.jsonl:{SMOKE_SENDS + 1}: bad corpus row: `prompt` must be a non-empty string" in w
        for w in strict["warnings"]
    )
    skipping = plan_summary(overrides(inputs, "+corpus.code_complete.skip_bad_rows=true"))
    row = next(r for r in skipping["corpora"] if r["corpus"] == "code_complete")
    assert row["skipped_rows"] == 1 and row["skip_reasons"][0].endswith("`prompt` must be a non-empty string")
    assert not skipping["warnings"]


def test_plan_names_every_missing_corpus(inputs):
    for name in ("code_complete", "chat_bench"):
        (inputs / "data" / "corpora" / f"{name}.jsonl").unlink()
    summary = plan_summary(overrides(inputs))
    assert sorted(r["corpus"] for r in summary["corpora"] if r.get("error")) == [
        "chat_bench",
        "code_complete",
    ]
    assert len([w for w in summary["warnings"] if "is missing" in w]) == 2


# --- 4. the store ---------------------------------------------------------------------------------


def test_a_store_that_is_a_file_or_cannot_be_made_is_a_warning_in_plan(inputs, tmp_path):
    (tmp_path / "a_file").write_text("")
    for store, reason in (
        (tmp_path / "a_file", "is a file, not a folder"),
        ("/proc/forbidden", "cannot be written"),
    ):
        warnings = plan_summary(overrides(inputs, f"paths.store={store}"))["warnings"]
        assert [w for w in warnings if w.startswith(f"paths.store {store}") and reason in w], warnings
    assert not plan_summary(overrides(inputs))["warnings"]
    assert not (inputs / "store").exists()  # plan makes nothing


# --- 5. run.mode ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["plan", "simulate"])
def test_a_bad_run_mode_is_rejected_by_plan_and_simulate(command):
    from grid.cli.plan_report import simulate_plan

    call = plan_summary if command == "plan" else simulate_plan
    with pytest.raises(ConfigError, match=r"run\.mode must be one of resume, failed, all, got 'bogus'"):
        call(["experiment=final", "run.mode=bogus"])


@pytest.mark.parametrize("command", ["status", "corpus", "summary", "report"])
def test_a_bad_run_mode_is_an_error_in_the_commands_that_only_read(command, tmp_path, capsys):
    """They do not use run.mode, but a typo there is still the user's mistake to hear about."""
    from grid.__main__ import main

    code = main([command, f"paths.store={tmp_path / 'store'}", "run.mode=bogus"])
    assert code == 2
    assert "run.mode must be one of resume, failed, all, got 'bogus'" in capsys.readouterr().err
    main([command, f"paths.store={tmp_path / 'store'}", "run.mode=failed"])  # a mode there is: no such line
    assert "run.mode" not in capsys.readouterr().err


# --- 7. plan counts the drift anchor --------------------------------------------------------------


def test_plan_counts_the_anchor_launches_in_launches_and_gpu_hours():
    from grid.plan.cost import group_cost
    from grid.plan.groups import group_by_engine

    with_anchor = plan_summary(["experiment=smoke"])
    without = plan_summary(["experiment=smoke", "grid.anchor.enabled=false"])
    assert with_anchor["anchor_launches"] == 2 and without["anchor_launches"] == 0
    assert with_anchor["engine_launches"] == without["engine_launches"] + 2
    assert with_anchor["cells"] == without["cells"]
    from grid.plan.anchor import anchor_cells

    config = to_config(compose_config(["experiment=smoke"]))
    anchor_s = sum(group_cost(group_by_engine([c])[0], config.plan).gpu_s for c in anchor_cells(config))
    assert with_anchor["gpu_hours"] == pytest.approx(without["gpu_hours"] + anchor_s / 3600)
    tiny = next(b for b in with_anchor["bundles"] if b["model"] == "tiny")
    assert tiny["anchor_launches"] == 2


# --- `run` itself: wired before its session line (grid/orchestrate/run.py) ------------------------------


@pytest.fixture
def no_launch(monkeypatch):
    """Anything that gets as far as a launch fails the test."""

    def launch(*args, **kwargs):
        raise AssertionError("launched")

    monkeypatch.setattr(grid.orchestrate.run, "launch", launch)


def run_quietly(args):
    out = io.StringIO()
    try:
        return grid.orchestrate.run.run(args, Console(file=out, width=200))
    finally:
        assert "session " not in out.getvalue(), out.getvalue()


def test_a_store_that_is_a_file_stops_the_run_before_the_session_line(inputs, no_launch, tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ConfigError, match=r"paths\.store .*a_file: .*a_file is a file, not a folder"):
        run_quietly(overrides(inputs, f"paths.store={tmp_path / 'a_file'}"))


def test_every_problem_shows_at_once(inputs, no_launch):
    (inputs / "data" / "corpora" / "chat_bench.jsonl").write_bytes(b"\x00\x01binary")
    long_prompt_corpus(inputs, 3000)
    with pytest.raises(ConfigError) as caught:
        run_quietly(overrides(inputs, "paths.store=/proc/forbidden"))
    text = str(caught.value)
    assert text.startswith("3 problems stop the run before any engine starts:")
    assert "paths.store /proc/forbidden cannot be written" in text
    assert "corpus 'chat_bench': corpus file" in text and "is binary" in text
    assert "corpus 'code_complete'" in text and "1 of 29 prompts do not fit model 'tiny'" in text


def test_config_problems_show_together_before_the_grid_is_expanded(inputs, no_launch):
    # A value outside its field's range (run.mode=bogus) stops at compose time, before these
    # (tests/unit/grid/config/test_compose_ranges.py); what needs two fields or a model file shows here.
    with pytest.raises(ConfigError) as caught:
        run_quietly(overrides(inputs, "load.max_tokens=4096", "grid.models=[llama31_405b_fp8,llama31_70b]"))
    text = str(caught.value)
    assert "load.max_tokens 4,096 leaves no room for a prompt in engine.max_model_len 2,048" in text
    assert "model 'llama31_405b_fp8' needs 8 GPUs" in text and "model 'llama31_70b' needs 2 GPUs" in text


def test_a_bad_row_hint_names_the_corpus_to_set_skip_bad_rows_on(tmp_path):
    """The trace reader does not know the corpus's name; the preflight fills it into the hint."""
    trace = tmp_path / "latin1.jsonl"
    trace.write_bytes(b'{"prompt": "one"}\n{"prompt": "two"}\n{"prompt": "caf\xe9"}\n')
    summary = plan_summary(["experiment=smoke", "grid.corpora=[lat]", f"+corpus.lat.path={trace}"])
    (line,) = [w for w in summary["warnings"] if "not UTF-8" in w]
    assert "+corpus.lat.skip_bad_rows=true" in line and "<name>" not in line, line


# --- a resume over a changed corpus (issue 30) ----------------------------------------------------


def store_done_cells(root, args, hashes=True):
    """Every cell of the grid but the first done, as a worker stores it (corpus hash, measured prompts)."""
    from grid.config.expand import expand, to_config
    from store.layout import StoreLayout
    from store.writer import write_ok_attempt
    from workers.load.client import RequestRecord
    from workers.load.prompts import cell_schedule, read_corpus

    cells = expand(to_config(compose_config(args)))
    layout = StoreLayout(root / "store")
    for cell in cells[1:]:
        corpus = read_corpus(root / "data" / cell.corpus.path)
        measured = [p.content_hash for p in cell_schedule(cell, corpus, False).measured]
        summary = {**cell.as_record(), "valid": True, "output_tok_per_s": 1.0}
        summary["measured_prompt_hashes"] = json.dumps(measured)
        if hashes:
            summary["corpus_sha256"] = corpus.sha256
        tags = {"session_id": "s0", "cell_key": cell.key, "attempt_id": f"s0-{cell.key[:8]}"}
        record = RequestRecord(0, "p0", "measure", send_ns=0, end_ns=10, chunk_ns=[1], n_chunks=1)
        write_ok_attempt(layout, tags, [record], summary)
    return cells


def run_to_launch(args):
    return grid.orchestrate.run.run(args, Console(file=io.StringIO(), width=200))


def change_a_prompt(root):
    rows = [{"id": f"cc{i}", "prompt": f"def f{i} x"} for i in range(SMOKE_SENDS)]
    rows[3]["prompt"] = "def f3 word"
    write_rows(root / "data" / "corpora" / "code_complete.jsonl", rows)


@pytest.mark.parametrize("hashes", [True, False], ids=["hash recorded", "stored before hashes"])
def test_a_resume_over_a_changed_corpus_stops_before_launch(inputs, no_launch, hashes):
    from workers.load.prompts import content_sha256

    args = overrides(inputs, "grid.anchor.enabled=false")
    cells = store_done_cells(inputs, args, hashes)
    assert len({c.corpus.name for c in cells}) == 2
    old = content_sha256(inputs / "data" / "corpora" / "code_complete.jsonl")
    with pytest.raises(AssertionError, match="launched"):  # the same corpora: on to the launch
        run_to_launch(args)
    change_a_prompt(inputs)
    new = content_sha256(inputs / "data" / "corpora" / "code_complete.jsonl")
    with pytest.raises(ConfigError) as caught:
        run_quietly(args)
    line = str(caught.value)
    assert "\n" not in line and line.startswith("corpus 'code_complete': ")
    done = sum(c.corpus.name == "code_complete" for c in cells[1:])
    measured = (
        f"sha256 {old[:16]}" if hashes else f"other measured prompts than this copy gives ({done} cells"
    )
    assert f"{done} done cell{'s' if done != 1 else ''} of this grid measured {measured}" in line
    assert (
        f"this run reads sha256 {new[:16]} from {inputs / 'data' / 'corpora' / 'code_complete.jsonl'}" in line
    )
    assert "paths.store=" in line and "run.mode=all" in line
    with pytest.raises(AssertionError, match="launched"):  # a new study on the new corpus
        run_to_launch([*args, "run.mode=all"])


def test_the_session_records_every_corpus_hash(inputs, monkeypatch):
    from grid.orchestrate import session
    from workers.load.prompts import content_sha256

    seen = {}
    monkeypatch.setattr(
        grid.orchestrate.run, "launch", lambda phases, ctx, *rest, **kw: seen.update(ctx.corpus_sha256) or []
    )
    run_to_launch(overrides(inputs))
    data = inputs / "data" / "corpora"
    assert seen == {name: content_sha256(data / f"{name}.jsonl") for name in ("code_complete", "chat_bench")}
    record = session.fingerprint("s1", "h", seen)["corpora"]
    assert record == [{"corpus": name, "sha256": seen[name]} for name in sorted(seen)]

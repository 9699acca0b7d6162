"""A real cell end to end: Hydra -> Ray -> vllm serve (CPU) -> streaming load -> Parquet."""

from __future__ import annotations

import itertools
import json
import shutil

import duckdb
import pandas as pd
import pytest
from rich.console import Console

from grid.orchestrate.run import run
from store.read import attempts, connect, ok_files
from tests.closing import measured_none_failed
from tests.engine.conftest import describe, engine_processes
from vocab.paths import project_path

NUM_PROMPTS = 12
MAX_TOKENS = 32
CONCURRENCY = 4


def run_small(root, *extra: str) -> tuple[int, str]:
    """The smoke grid at a load small enough for tests; returns exit code and printed output."""
    console = Console(record=True, width=160)
    overrides = [
        "experiment=smoke",
        f"paths.store={root}",
        f"load.num_prompts={NUM_PROMPTS}",
        f"load.max_tokens={MAX_TOKENS}",
        "load.warmup_requests=2",
        f"load.concurrency={CONCURRENCY}",
        "gates.min_window_s=1",
        "gates.min_requests=2",
        # The run, not the gates: a busy machine's starved engine must not make the run exit 1.
        "run.keep_invalid=true",
        # 12 prompts judged without a floor (smoke has no replicate): below min_prompts that is no_reference.
        f"gates.equivalence.min_prompts={NUM_PROMPTS}",
        # Anchors add two engine launches; their order is tested on the fake cluster.
        "grid.anchor.enabled=false",
        # Every corpus at load.num_prompts (smoke gives chat_bench 40 for the demo's windows).
        "~grid.num_prompts.chat_bench",
        *extra,
    ]
    code = run(overrides, console)
    return code, console.export_text()


@pytest.fixture(scope="module")
def store(tmp_path_factory, local_ray):
    root = tmp_path_factory.mktemp("store")
    return root, *run_small(root, "session_id=test-session")


def test_run_succeeds_and_prints_the_table(store):
    _, code, output = store
    assert code == 0, output
    assert "out tok/s" in output
    assert measured_none_failed(output, 4), output[-3000:]


def test_a_log_shows_each_engine_start_and_no_phase_file_is_left(store):
    """Without a live bar (a log), the driver prints what each engine is doing (store/phases.py)."""
    root, _, output = store
    phases = [line for line in output.splitlines() if line.startswith("phase ")]
    assert any(": engine start (since " in line for line in phases), output
    # Phases come from the cells' own labels (model/lever/corpus/repeat).
    assert all(line.split()[1].startswith("tiny/") for line in phases), phases
    assert not list((root / "phases").glob("*/*.json"))


def test_every_cell_row_and_the_session_carry_the_corpus_hash(store):
    """Issue 30: what each cell measured is named by content, the bytes `python -m assets` built."""
    from grid.config.compose import compose_config
    from vocab.paths import project_path
    from workers.load.prompts import content_sha256

    root, _, _ = store
    data = project_path(compose_config([]).paths.data_dir) / "corpora"
    cells = connect(root).execute("select corpus, corpus_sha256 from cells").df()
    expected = {name: content_sha256(data / f"{name}.jsonl") for name in cells["corpus"].unique()}
    assert dict(zip(cells["corpus"], cells["corpus_sha256"], strict=True)) == expected
    meta = {name: json.loads((data / f"{name}.meta.json").read_text())["sha256"] for name in expected}
    assert meta == expected
    session = json.loads((root / "sessions" / "test-session.json").read_text())
    assert session["corpora"] == [{"corpus": n, "sha256": expected[n]} for n in sorted(expected)]


def test_every_cell_has_an_ok_manifest(store):
    root, _, _ = store
    found, problems = attempts(root)
    assert not problems
    assert sorted(a.status for a in found) == ["ok"] * 4
    assert {a.session_id for a in found} == {"test-session"}


def test_rows_read_back_with_pandas_and_duckdb(store):
    root, _, _ = store
    frames = [pd.read_parquet(path) for path in ok_files(root, "requests.parquet")]
    requests = pd.concat(frames)
    # Each cell's measured requests, and its warm-up's (kept for the equivalence gate to judge).
    assert requests["phase"].value_counts().to_dict() == {"measure": 4 * NUM_PROMPTS, "warmup": 4 * 2}
    assert (requests["error_type"].isna()).all()
    assert (requests["completion_tokens"] > 0).all()
    assert (requests["completion_tokens"] <= MAX_TOKENS).all()
    # Timestamps are ordered: send < first chunk <= last chunk <= end.
    for row in requests.itertuples():
        assert row.send_ns < row.chunk_ns[0] <= row.chunk_ns[-1] <= row.end_ns
    con = duckdb.connect()
    files = ok_files(root, "summary.parquet")
    count = con.execute("select count(*) from read_parquet(?)", [files]).fetchone()[0]
    assert count == 4


def test_client_tokens_reconcile_with_server_counters(store):
    root, _, _ = store
    cells = connect(root).execute("select * from cells").df()
    for row in cells.itertuples():
        assert row.output_tokens == row.srv_generation_tokens, row.lever


def test_suffix_cells_draft_and_van_cells_do_not(store):
    root, _, _ = store
    cells = connect(root).execute("select lever, k, srv_spec_draft_tokens, acceptance_rate from cells").df()
    suffix = cells[cells["lever"] == "suffix"]
    van = cells[cells["lever"] == "van"]
    assert (suffix["k"] == 8).all()
    assert (suffix["srv_spec_draft_tokens"] > 0).all()
    assert suffix["acceptance_rate"].between(0, 1).all()
    assert (van["srv_spec_draft_tokens"] == 0).all()


def test_no_engine_process_is_left(store):
    assert not (left := engine_processes()), describe(left)


def test_window_gates_and_effective_config_are_columns(store):
    root, _, _ = store
    cells = connect(root).execute("select * from cells").df()
    assert cells["window_s"].notna().all() and (cells["window_s"] > 0).all()
    assert cells["chunk_tokens_exact"].all()  # vLLM sent token ids per chunk
    assert cells["gate_tokens_reconciled"].all()
    assert cells["gate_no_errors"].all()
    # The window excludes ramp-up and drain, so it is shorter than the whole run.
    whole_s = cells["output_tokens"] / cells["bench_output_tok_per_s"]
    assert (cells["window_s"] < whole_s).all()
    by_lever = cells.set_index("lever")
    assert set(by_lever.loc["van", "engine_async_scheduling"]) == {True}
    assert set(by_lever.loc["suffix", "engine_async_scheduling"]) == {False}
    assert set(cells["engine_log_version"]) == {"0.32.0"}
    # A stream's step as the client saw it: every step read took time, a VALID cell (its client kept
    # up) shows one, each step brought at least one token, and van one a step (a lagging server may
    # merge a few chunks, never half of them). A starved client may read a whole window in one go:
    # it then shows no step time (CI, 2026-12-06), never a 0 ms one.
    gap_ms = cells["chunk_gap_ms_p50"]
    assert (gap_ms.dropna() > 0).all(), gap_ms
    assert gap_ms[cells["valid"].astype(bool)].notna().all(), cells[["lever", "valid", "chunk_gap_ms_p50"]]
    assert (cells["tokens_per_chunk"] >= 1).all()
    assert (by_lever.loc[["van"], "tokens_per_chunk"] < 2).all()


def test_suffix_says_exactly_what_van_says_in_float32(store):
    root, _, output = store
    verdicts = connect(root).execute("select * from equivalence").df()
    suffix = verdicts[verdicts["lever"] == "suffix"]
    assert len(suffix) == 2, verdicts
    assert (suffix["verdict"] == "pass").all(), suffix["reason"].tolist()
    assert (suffix["exact_match_rate"] == 1.0).all()
    assert "equivalence pass tiny/suffix-k8/code_complete" in output


def test_the_probe_scores_the_same_text_identically_on_van_and_suffix(store):
    root, _, _ = store
    con = connect(root)
    cells = con.execute("select cell_key, lever, probe_prompts, probe_positions, probe_error from cells").df()
    assert (cells["probe_prompts"] == 8).all() and cells["probe_error"].isna().all(), cells
    probes = con.execute("select cell_key, prompt_id, position, token_ids, logprobs from probes").df()
    per_cell = probes.groupby("cell_key").size()
    assert per_cell.to_dict() == cells.set_index("cell_key")["probe_positions"].to_dict()
    assert probes["token_ids"].map(len).eq(5).all()
    assert probes["logprobs"].map(lambda lps: list(lps) == sorted(lps, reverse=True)).all()
    verdicts = con.execute("select * from equivalence").df()
    suffix = verdicts[verdicts["lever"] == "suffix"]
    assert (suffix["topk_agreement"] == 1.0).all(), suffix
    assert (suffix["kl_nats"] < 1e-3).all(), suffix["kl_nats"].tolist()


@pytest.fixture(scope="module")
def perturbed(store, tmp_path_factory, local_ray):
    """The same store plus van at temperature 1: a lever that changes outputs on purpose."""
    root = tmp_path_factory.mktemp("perturbed") / "store"
    shutil.copytree(store[0], root)
    return root, *run_small(root, "load.temperature=1.0", "grid.levers=[van]", "grid.corpora=[code_complete]")


def test_the_gate_fails_a_lever_that_changes_outputs(perturbed):
    root, code, output = perturbed
    assert code == 0, output
    verdicts = connect(root).execute("select * from equivalence").df()
    hot = verdicts[verdicts["lever"] == "van"]
    assert len(hot) == 1, verdicts
    assert hot["verdict"].iloc[0] == "fail", hot["reason"].iloc[0]
    assert hot["exact_match_rate"].iloc[0] < 0.5
    # Sampling changed the outputs, not the model: the probe's distributions still agree.
    assert hot["kl_nats"].iloc[0] < 1e-3 and hot["topk_agreement"].iloc[0] == 1.0


def sent_before(cells: pd.DataFrame) -> dict[str, set[str]]:
    """Per cell: every prompt (content hash) its engine launch was sent before its measured requests.

    Rebuilt from the stored hashes alone (warm-up, measured and probe prompts of
    the earlier cells on the same launch, and the cell's own warm-up), so it
    checks the runner's reuse counts instead of trusting them.
    """
    out = {}
    for _, launch in cells.sort_values("engine_cell_index").groupby("engine_launch_id"):
        seen: set[str] = set()
        for row in launch.itertuples():
            out[row.cell_key] = seen | set(json.loads(row.warmup_prompt_hashes))
            for column in ("warmup_prompt_hashes", "measured_prompt_hashes", "probe_prompt_hashes"):
                seen |= set(json.loads(getattr(row, column)))
    return out


def test_no_measured_prompt_was_sent_earlier_to_its_engine(store):
    root, _, _ = store
    cells = connect(root).execute("select * from cells").df()
    # van serves both corpora on one launch; suffix gets a fresh engine per corpus.
    launches = cells.groupby("lever")["engine_launch_id"].nunique().to_dict()
    assert launches == {"van": 1, "suffix": 2}
    earlier = sent_before(cells)
    for row in cells.itertuples():
        measured = json.loads(row.measured_prompt_hashes)
        assert len(measured) == len(set(measured)) == NUM_PROMPTS
        assert not set(measured) & earlier[row.cell_key], row.cell_key
        assert row.prompts_reused == 0
    suffix = cells[cells["lever"] == "suffix"]
    assert suffix["suffix_cache_fresh"].all() and (suffix["suffix_cache_settings"] == "{}").all()


def test_gates_read_the_stream_and_the_servers_own_running_count(store):
    root, _, _ = store
    cells = connect(root).execute("select * from cells").df()
    assert (cells["stream_usage_mismatches"] == 0).all() and (cells["requests_without_token_ids"] == 0).all()
    assert cells["gate_stream_tokens"].all()
    assert (cells["streamed_output_tokens"] == cells["output_tokens"]).all()
    assert (cells["srv_load_samples"] > 0).all(), cells["srv_load_samples"].tolist()
    assert cells["srv_running_mean"].between(0, CONCURRENCY).all()


def test_each_cell_records_where_its_time_went(store):
    root, _, _ = store
    cells = connect(root).execute("select * from cells").df()
    for phase in ("warmup", "settle", "measure", "drain", "probe"):
        assert (cells[f"phase_{phase}_s"] >= 0).all(), phase
    assert (cells["phase_measure_s"] >= cells["window_s"]).all()
    assert (cells["engine_start_share_s"] > 0).all()
    assert (cells["phase_cell_s"] > cells["window_s"]).all()


# A corpus of the first 20 chat_bench prompts, given as a user's trace: 12 measured (+ 2 warm-up) per
# repeat must overlap between repeats (by >= 2 x 12 - 20 = 4). At chat_bench's 110 the overlap took 60
# a repeat: the fixture took 81 s in a fresh clone's `make test`, 45 s with this one (2026-12-06).
SMALL_CORPUS_PROMPTS = 20
REPEATED_PROMPTS = 12


@pytest.fixture(scope="module")
def repeated(tmp_path_factory, local_ray):
    """Two repeats on one van engine, allowed: most of the second repeat's prompts were served before."""
    root = tmp_path_factory.mktemp("repeated") / "store"
    trace = root.parent / "small.jsonl"
    with project_path(".cache/data/corpora/chat_bench.jsonl").open() as handle:
        trace.write_text("".join(itertools.islice(handle, SMALL_CORPUS_PROMPTS)))
    extra = (
        "grid.levers=[van]",
        "grid.corpora=[small]",
        f"+corpus.small.path={trace}",
        "grid.repeats=2",
        "grid.repeat_order=same_engine",
        # van alone: no verdict to feed, so no logprob probe (~5 s of the two cells).
        "gates.equivalence.probe_prompts=0",
    )
    return root, *run_small(
        root, *extra, f"load.num_prompts={REPEATED_PROMPTS}", "load.max_tokens=8", "load.allow_repeats=true"
    )


def test_allowed_repeats_are_counted_and_the_store_agrees(repeated):
    root, code, output = repeated
    assert code == 0, output
    assert "REPEATED PROMPTS tiny/small/van" in output
    cells = connect(root).execute("select * from cells").df().sort_values("repeat")
    assert cells["engine_launch_id"].nunique() == 1
    first, second = cells.itertuples()
    assert first.prompts_reused == 0
    # Two draws of 12 from 20 prompts share at least 4.
    assert (
        second.prompts_reused
        == second.prompts_reused_earlier_repeat
        >= 2 * REPEATED_PROMPTS - SMALL_CORPUS_PROMPTS
    )
    earlier = sent_before(cells)
    for row in (first, second):
        reused = set(json.loads(row.measured_prompt_hashes)) & earlier[row.cell_key]
        assert len(reused) == row.prompts_reused

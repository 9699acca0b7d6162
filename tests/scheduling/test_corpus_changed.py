"""A node whose corpus is not the bytes the driver planned stops those cells (issue 30).

The driver hashes every corpus before launch; here the code_complete file is
changed after that and before the workers read it, as a node with its own,
different copy would read it. Its cells fail with one line naming the node,
the corpus, both hashes and the fix, once (a retry would read the same bytes);
chat_bench's cells, whose file is the planned one, are measured and carry their
corpus's hash.
"""

from __future__ import annotations

import io
import json
import os
import socket

import pandas as pd
from rich.console import Console

import grid.orchestrate.run
from grid.orchestrate.run import run
from store.read import attempts
from tests.scheduling.conftest import stub_overrides
from workers.load.prompts import content_sha256


def test_a_node_with_another_corpus_stops_its_cells_and_the_others_run(
    cluster, inputs, no_leaks, monkeypatch
):
    corpora = inputs / "data" / "corpora"
    planned = {name: content_sha256(corpora / f"{name}.jsonl") for name in ("code_complete", "chat_bench")}
    real_launch = grid.orchestrate.run.launch

    def launch_after_a_change(phases, ctx, *rest, **kwargs):
        assert ctx.corpus_sha256 == planned  # what the driver read before launch
        rows = (corpora / "code_complete.jsonl").read_text().replace("prompt 3", "prompt three")
        (corpora / "code_complete.jsonl").write_text(rows)
        return real_launch(phases, ctx, *rest, **kwargs)

    monkeypatch.setattr(grid.orchestrate.run, "launch", launch_after_a_change)
    shown = io.StringIO()
    # Two attempts allowed, one made: a retry reads the same bytes (issue 45 item 6).
    assert run(stub_overrides(inputs, cluster, "run.max_attempts=2"), Console(file=shown, width=400)) == 1
    changed = content_sha256(corpora / "code_complete.jsonl")
    found, _ = attempts(inputs / "store")
    failed = [a for a in found if a.status == "failed"]
    assert len(failed) == 2 and all(a.status == "ok" for a in found if a not in failed)
    assert len({a.cell_key for a in failed}) == 2, "a changed corpus was retried"
    assert shown.getvalue().count("not retried: a retry cannot fix it") == 2
    for attempt in failed:
        line = attempt.error.splitlines()[0]
        assert line.startswith(f"CorpusChanged: node {socket.gethostname()}: corpus 'code_complete' (")
        assert f"has sha256 {changed[:16]}, the driver planned {planned['code_complete'][:16]}" in line
        assert "python -m assets" in line
    for attempt in (a for a in found if a.status == "ok"):
        summary = pd.read_parquet(attempt.folder / "summary.parquet").iloc[0]
        assert summary["corpus"] == "chat_bench" and summary["corpus_sha256"] == planned["chat_bench"]
    (session,) = (inputs / "store" / "sessions").glob("*.json")
    recorded = json.loads(session.read_text())["corpora"]
    assert recorded == [{"corpus": name, "sha256": planned[name]} for name in sorted(planned)]


def test_every_node_reads_one_copy_of_the_corpora_from_a_url(cluster, inputs, s3_url, s3_endpoint, no_leaks):
    """paths.data_dir in the object store beside the results: workers fetch the planned bytes by hash."""
    from store.fs import open_store
    from store.read import connect
    from tests.scheduling.test_object_store import s3_overrides

    url, options = s3_url
    data_url = url.removesuffix("/results") + "/data"
    data = open_store(data_url, options)
    local = inputs / "data" / "corpora"
    planned = {}
    for name in ("code_complete", "chat_bench"):
        (data / "corpora" / f"{name}.jsonl").write_bytes((local / f"{name}.jsonl").read_bytes())
        planned[name] = content_sha256(local / f"{name}.jsonl")
        (local / f"{name}.jsonl").unlink()  # no node has a copy of its own
    cache = inputs / "cache"
    overrides = [*s3_overrides(inputs, cluster, url, s3_endpoint), f"paths.data_dir={data_url}"]
    overrides.append(f"paths.cache_dir={cache}")
    with open(os.devnull, "w") as sink:
        assert run(overrides, Console(file=sink, width=160)) == 0
    cells = connect(open_store(url, options)).execute("SELECT corpus, corpus_sha256 FROM cells").fetchall()
    assert len(cells) == 4 and all(sha == planned[corpus] for corpus, sha in cells)
    # The driver's and the workers' copies, one folder per content (all nodes share this machine's disk).
    copies = {p.parent.name: content_sha256(p) for p in cache.glob("corpora/*/*.jsonl")}
    assert copies == {sha: sha for sha in planned.values()}

"""Issue 30 item 4: one copy of the corpora for a cluster, at a URL (moto's S3 server on 127.0.0.1).

Every reader (the driver's checks, each worker, `grid corpus`) fetches a corpus
into <cache_dir>/corpora/<sha256>/ and reads that copy; `python -m assets`
builds locally and uploads what the URL lacks.
"""

import hashlib
import json

import pytest

from assets.__main__ import publish
from grid.cli.corpus_report import describe
from grid.cli.plan_report import plan_summary
from store.fs import open_store
from tests.s3server import options_override
from tests.unit.grid.checks.test_preflight import SMOKE_SENDS, inputs, overrides  # noqa: F401 (fixture)
from vocab.errors import ConfigError
from vocab.schema import CorpusSpec
from workers.load.prompts import CorpusChanged, check_planned, content_sha256, corpus_file, read_corpus

ROWS = "".join(json.dumps({"id": f"p{i}", "prompt": f"def f{i}():"}) + "\n" for i in range(30))


@pytest.fixture
def data_url(s3_url):
    url, options = s3_url
    return url.removesuffix("/results") + "/data", options


def test_a_corpus_at_a_url_is_read_from_a_local_copy_named_by_its_content(data_url, tmp_path):
    url, options = data_url
    root = open_store(url, options)
    (root / "corpora" / "c.jsonl").write_text(ROWS)
    sha = hashlib.sha256(ROWS.encode()).hexdigest()
    copy = corpus_file(root, "corpora/c.jsonl", tmp_path / "cache")
    assert copy == tmp_path / "cache" / "corpora" / sha / "c.jsonl" and content_sha256(copy) == sha
    assert [p.prompt_id for p in read_corpus(copy).prompts][:2] == ["p0", "p1"]
    (root / "corpora" / "c.jsonl").unlink()
    # A node that holds the planned bytes reads them without fetching again.
    assert corpus_file(root, "corpora/c.jsonl", tmp_path / "cache", planned=sha) == copy
    with pytest.raises(
        ConfigError, match=r"corpus file s3://.*/data/corpora/c\.jsonl is missing; .*python -m assets"
    ):
        corpus_file(root, "corpora/c.jsonl", tmp_path / "cache")
    # The URL's copy changed after the driver planned it: fetched, hashed, and the cell stops.
    (root / "corpora" / "c.jsonl").write_text(ROWS.replace("f3", "g3"))
    other = corpus_file(root, "corpora/c.jsonl", tmp_path / "other-node", planned=sha)
    with pytest.raises(CorpusChanged, match=f"the driver planned {sha[:16]}"):
        check_planned(read_corpus(other), "c", other, sha)


def test_assets_upload_what_the_url_lacks_and_grid_corpus_reads_it(data_url, tmp_path, capsys):
    url, options = data_url
    root = open_store(url, options)
    built = tmp_path / "built" / "corpora" / "c.jsonl"
    built.parent.mkdir(parents=True)
    built.write_text(ROWS)
    sha = hashlib.sha256(ROWS.encode()).hexdigest()
    meta = {"name": "c", "sha256": sha, "prompts": 30, "max_prompt_tokens": 100, "licenses": ["MIT"]}
    built.with_suffix(".meta.json").write_text(json.dumps(meta))
    publish({"c": built}, root)
    assert f"assets: corpus c ({sha[:16]}) -> {url}/corpora/c.jsonl" in capsys.readouterr().out
    assert (root / "corpora" / "c.jsonl").read_bytes() == ROWS.encode()
    publish({"c": built}, root)  # nothing new: nothing uploaded
    assert capsys.readouterr().out == ""
    row = describe(CorpusSpec(name="c", path="corpora/c.jsonl"), root, tmp_path / "cache")
    assert (row["sha256"], row["state"], row["prompts"]) == (sha, "", 30)


def test_a_run_plans_from_the_urls_copy(data_url, inputs, tmp_path):  # noqa: F811
    url, options = data_url
    root = open_store(url, options)
    for name in ("code_complete", "chat_bench"):
        (root / "corpora" / f"{name}.jsonl").write_bytes(
            (inputs / "data" / "corpora" / f"{name}.jsonl").read_bytes()
        )
    endpoint = options["endpoint_override"]
    args = overrides(inputs, f"paths.data_dir={url}", *options_override(endpoint))
    summary = plan_summary(
        [a for a in args if not a.startswith("paths.store=")]
        + [f"paths.store={url.removesuffix('/data')}/results"]
    )
    assert not [w for w in summary["warnings"] if "corpus" in w], summary["warnings"]
    assert {r["corpus"] for r in summary["corpora"]} == {"code_complete", "chat_bench"}
    (root / "corpora" / "code_complete.jsonl").unlink()
    summary = plan_summary(
        [a for a in args if not a.startswith("paths.store=")]
        + [f"paths.store={url.removesuffix('/data')}/results"]
    )
    (line,) = [w for w in summary["warnings"] if "corpus 'code_complete'" in w]
    assert f"corpus file {url}/corpora/code_complete.jsonl is missing" in line


def test_python_m_assets_builds_locally_and_uploads_to_a_url_data_dir(
    data_url, tmp_path, monkeypatch, capsys
):
    import assets.__main__ as assets_main
    from assets import corpora

    url, options = data_url
    built_into = []

    def small_ensure(data_dir, model_dir, cap, only=None):  # real builders: tests/unit/assets
        path = data_dir / "corpora" / "c.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ROWS)
        meta = {"name": "c", "sha256": hashlib.sha256(ROWS.encode()).hexdigest(), "max_prompt_tokens": cap}
        corpora.meta_path(path).write_text(json.dumps(meta))
        built_into.append(data_dir)
        return {"c": path}

    monkeypatch.setattr(assets_main.corpora, "ensure", small_ensure)
    monkeypatch.setattr(assets_main.smollm2, "ensure", lambda models_dir: tmp_path / "model")
    monkeypatch.setattr(assets_main.dummy_models, "ensure", lambda models_dir: None)
    args = [f"paths.data_dir={url}", f"paths.cache_dir={tmp_path / 'cache'}"]
    assert assets_main.main([*args, *options_override(options["endpoint_override"])]) == 0
    assert built_into == [assets_main.build_dir(tmp_path / "cache", url)]
    assert (open_store(url, options) / "corpora" / "c.jsonl").read_bytes() == ROWS.encode()
    assert "assets: corpus c (" in capsys.readouterr().out

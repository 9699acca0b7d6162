"""`python -m assets`: a data store that does not answer is one error line, not a traceback."""

from __future__ import annotations

import json

import assets.__main__ as assets_main
from tests.unit.grid.test_hostile_inputs import S3_ENV, UNREACHABLE


def test_an_unreachable_data_store_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    built = tmp_path / "chat_bench.jsonl"
    built.write_text('{"prompt": "a"}\n')
    built.with_suffix(".meta.json").write_text(json.dumps({"name": "chat_bench", "sha256": "ab" * 32}))
    monkeypatch.setattr(assets_main.smollm2, "ensure", lambda models: tmp_path)
    monkeypatch.setattr(assets_main.dummy_models, "ensure", lambda models: None)
    monkeypatch.setattr(assets_main.corpora, "ensure", lambda *args: {"chat_bench": built})
    argv = [
        "paths.data_dir=s3://bkt/data",
        f"+paths.store_options.endpoint_override={UNREACHABLE}",
        f"paths.cache_dir={tmp_path / 'cache'}",
    ]
    assert assets_main.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: store s3://bkt/data") and "did not answer or refused" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_only_is_read_wherever_it_stands_and_left_out_of_the_overrides():
    assert assets_main.only_corpora(["--only", "a,b", "x=1"]) == (["a", "b"], ["x=1"])
    assert assets_main.only_corpora(["x=1", "--only=a"]) == (["a"], ["x=1"])
    assert assets_main.only_corpora(["x=1"]) == (None, ["x=1"])


def test_only_without_names_is_one_line_and_exit_2(capsys):
    assert assets_main.main(["--only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --only needs corpus names") and len(err.strip().splitlines()) == 1, err

"""Failures a retry cannot fix are said so where they are recorded (issue 45 item 6): a corpus that
changed is found before the engine starts, and its cells are failed as not retryable."""

from __future__ import annotations

import json

from store.read import attempts
from vocab.errors import EngineError
from workers.engine.process import Engine
from workers.runner import run_group


def test_a_changed_corpus_fails_its_cells_before_the_engine_starts_and_not_retryable(
    fake_group, tmp_path, monkeypatch
):
    group, ctx = fake_group()
    ctx = type(ctx)(**{**ctx.__dict__, "corpus_sha256": {"code_complete": "0123456789abcdef" * 4}})
    started = []
    monkeypatch.setattr(Engine, "start", lambda self: started.append(self) or 1.0)
    (outcome,) = run_group(group, ctx)
    assert not started, "an engine was started for a cell whose corpus had changed"
    assert outcome.status == "failed" and outcome.retryable is False
    assert outcome.error.startswith("CorpusChanged: node ")
    assert "the driver planned 0123456789abcdef" in outcome.error
    (failed,) = attempts(tmp_path / "store")[0]
    manifest = json.loads((failed.folder / "manifest.json").read_text())
    assert manifest["retryable"] is False


def test_an_engine_that_fails_to_start_is_retryable(fake_group, tmp_path, monkeypatch):
    group, ctx = fake_group()

    def fails(self):
        raise EngineError("engine exited (code 1) before it was ready")

    monkeypatch.setattr(Engine, "start", fails)
    (outcome,) = run_group(group, ctx)
    assert outcome.status == "failed" and outcome.retryable is True
    (failed,) = attempts(tmp_path / "store")[0]
    assert json.loads((failed.folder / "manifest.json").read_text())["retryable"] is True


def test_requests_the_server_refuses_are_not_retryable(fake_group):
    """HTTP 4xx: the cell's configuration (a prompt over max_model_len, say), which a retry sends again."""
    group, ctx = fake_group("FAKE_STATUS=400", "FAKE_MESSAGE=prompt_too_long")
    (outcome,) = run_group(group, ctx)
    assert outcome.status == "failed" and outcome.retryable is False
    assert "400" in outcome.error

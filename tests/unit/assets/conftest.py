import pytest

from vocab.paths import project_path
from workers.load.tokens import TokenCounter

MODEL_DIR = project_path(".cache/models/SmolLM2-135M-Instruct")


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    if not (MODEL_DIR / "tokenizer.json").is_file():
        pytest.skip("the embedded model is not prepared; run `make assets`")
    return TokenCounter(MODEL_DIR)


@pytest.fixture
def few_packages(monkeypatch):
    """Builders over a few small packages and BFCL categories instead of the whole lists, to stay fast."""
    for module in ("assets.corpus_code", "assets.corpus_agentic"):
        monkeypatch.setattr(f"{module}.CODE_PACKAGES", ("requests", "jmespath"))
    monkeypatch.setattr("assets.corpus_code.COMPLETE_PACKAGES", ("python-dateutil",))
    monkeypatch.setattr("assets.corpus_agentic.BFCL_CATEGORIES", ("live_parallel", "live_parallel_multiple"))
    monkeypatch.setattr("assets.corpus_docs.DOC_PACKAGES", ("h11", "jmespath", "httpx"))


def check_rows(rows: list[dict], cap: int, chat: bool = True) -> None:
    """Every row has the loader's shape, provenance, and fits the cap."""
    assert rows
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert ("messages" in row) is chat and ("prompt" in row) is not chat
        assert 0 < row["prompt_tokens"] <= cap
        assert row["source"] and row["license"]
        if chat:
            assert row["messages"][-1]["role"] == "user"

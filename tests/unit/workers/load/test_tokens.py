import pytest

from tests.unit.assets.conftest import MODEL_DIR
from workers.load.tokens import TokenCounter, percentiles


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    if not (MODEL_DIR / "tokenizer.json").is_file():
        pytest.skip("the embedded model is not prepared; run `make assets`")
    return TokenCounter(MODEL_DIR)


def test_percentiles_are_nearest_rank():
    values = list(range(1, 101))
    assert percentiles(values) == {"p50": 50, "p90": 90, "p99": 99}
    assert percentiles([7]) == {"p50": 7, "p90": 7, "p99": 7}
    assert percentiles([]) == {"p50": 0, "p90": 0, "p99": 0}


def test_chat_count_is_the_rendered_template(counter):
    messages = [{"role": "user", "content": "Hello there"}]
    rendered = counter.render(messages)
    assert rendered.endswith("<|im_start|>assistant\n")
    assert counter.chat(messages) == counter.text(rendered, specials=False)


def test_overhead_plus_turns_matches_the_exact_count(counter):
    messages = [
        {"role": "user", "content": "What is a suffix tree?"},
        {"role": "assistant", "content": "A compressed trie of all suffixes of a string."},
        {"role": "user", "content": "And how is it used in speculative decoding?"},
    ]
    roles = tuple(m["role"] for m in messages)
    estimate = sum(counter.texts([m["content"] for m in messages])) + counter.chat_overhead(roles)
    assert estimate == counter.chat(messages)

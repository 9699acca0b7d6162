import json

import pytest

from vocab.errors import ConfigError
from workers.prompts import Prompt, TooFewPrompts, distinct, load_corpus, prompt_seed, schedule


def write(tmp_path, rows):
    path = tmp_path / "c.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_load_corpus_reads_prompts_and_messages(tmp_path):
    path = write(
        tmp_path, [{"id": 1, "prompt": "a"}, {"id": "b", "messages": [{"role": "user", "content": "hi"}]}]
    )
    prompts = load_corpus(path)
    assert prompts[0] == Prompt("1", "a", None)
    assert prompts[1].messages == ({"role": "user", "content": "hi"},)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["{not json"], r"c.jsonl:1: bad corpus row"),
        ([{"id": 1}], r"c.jsonl:1: bad corpus row"),
        ([{"id": 1, "prompt": "a"}, {"id": 2}], r"c.jsonl:2: bad corpus row: a row needs exactly one of"),
        ([], "has no prompts"),
    ],
)
def test_bad_rows_name_the_line(tmp_path, rows, message):
    with pytest.raises(ConfigError, match=message):
        load_corpus(write(tmp_path, rows))


def test_rows_without_id_are_numbered(tmp_path):
    assert load_corpus(write(tmp_path, ["", {"prompt": "x"}]))[0] == Prompt("row-2", "x", None)


def test_missing_corpus_says_how_to_build_it(tmp_path):
    with pytest.raises(ConfigError, match=r"make assets"):
        load_corpus(tmp_path / "nope.jsonl")


def test_schedule_is_seeded_and_disjoint():
    prompts = [Prompt(str(i), str(i)) for i in range(20)]
    a = schedule(prompts, warmup=4, measured=12, seed=3)
    b = schedule(prompts, warmup=4, measured=12, seed=3)
    c = schedule(prompts, warmup=4, measured=12, seed=4)
    assert a == b
    assert a.measured != c.measured
    assert a.repeated == 0
    measured = [p.prompt_id for p in a.measured]
    assert len(set(measured)) == 12
    assert not {p.prompt_id for p in a.warmup} & set(measured)


def test_a_corpus_too_small_stops_with_its_name_size_and_the_fix():
    prompts = [Prompt(str(i), str(i)) for i in range(10)]
    with pytest.raises(
        TooFewPrompts, match=r"corpus 'code' has 10 distinct prompts but a cell sends 2 warm-up"
    ):
        schedule(prompts, warmup=2, measured=12, seed=3, corpus="code")
    with pytest.raises(TooFewPrompts, match=r"grid.num_prompts.code=8.*load.allow_repeats=true"):
        schedule(prompts, warmup=2, measured=9, seed=3, corpus="code")


def test_duplicate_texts_count_once_whatever_their_ids():
    prompts = [Prompt(str(i), str(i % 5)) for i in range(10)]
    assert len(distinct(prompts)) == 5
    with pytest.raises(TooFewPrompts, match="has 5 distinct prompts"):
        schedule(prompts, warmup=1, measured=5, seed=0)
    chat = [Prompt("a", messages=({"role": "user", "content": "x"},)), Prompt("b", "x")]
    assert len(distinct(chat)) == 2  # a chat turn and a raw prompt are different requests


def test_allowed_repeats_cycle_and_count_every_reused_request():
    prompts = [Prompt(str(i), str(i)) for i in range(10)]
    plan = schedule(prompts, warmup=2, measured=12, seed=3, allow_repeats=True)
    # 12 measured from 10 prompts: 2 cycle back; and the warm-up's 2 prompts are among the 10.
    assert plan.repeated == 4
    assert len(plan.measured) == 12


def test_each_repeat_shuffles_with_its_own_seed():
    assert prompt_seed(5, 0) == 5 and prompt_seed(5, 2) == 7

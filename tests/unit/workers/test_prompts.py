import json

import pytest

from grid.errors import ConfigError
from workers.prompts import Prompt, load_corpus, schedule


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


def test_schedule_is_seeded_and_counts_repeats():
    prompts = [Prompt(str(i), str(i)) for i in range(10)]
    a = schedule(prompts, warmup=2, measured=12, seed=3)
    b = schedule(prompts, warmup=2, measured=12, seed=3)
    c = schedule(prompts, warmup=2, measured=12, seed=4)
    assert a == b
    assert a.measured != c.measured
    assert a.repeated == 2
    assert len({p.prompt_id for p in a.measured[:10]}) == 10


def test_schedule_warmup_avoids_first_measured_prompts():
    prompts = [Prompt(str(i), str(i)) for i in range(10)]
    plan = schedule(prompts, warmup=3, measured=5, seed=0)
    assert not {p.prompt_id for p in plan.warmup} & {p.prompt_id for p in plan.measured}

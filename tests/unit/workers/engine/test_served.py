from workers.engine.served import ServedPrompts
from workers.load.prompts import Prompt


def prompts(*texts: str) -> list[Prompt]:
    return [Prompt(f"id-{t}", t) for t in texts]


def test_a_fresh_engine_reuses_nothing():
    assert ServedPrompts().measured_reuse(prompts("w"), prompts("a", "b"), "code", 0).total == 0


def test_each_reuse_is_counted_by_where_the_engine_saw_it_first():
    served = ServedPrompts()
    served.add(prompts("x", "y"), "chat", 0)  # an earlier corpus on this launch
    served.add(prompts("z"), "code", 0)  # an earlier repeat of this corpus
    reuse = served.measured_reuse(prompts("w"), prompts("x", "z", "w", "a", "a", "b"), "code", 1)
    assert reuse.in_earlier_corpus == 1
    assert reuse.in_earlier_repeat == 1
    assert reuse.in_warmup == 1
    assert reuse.in_cell == 1
    assert reuse.total == 4
    assert reuse.as_columns()["prompts_reused"] == 4


def test_the_same_text_under_another_id_is_the_same_prompt():
    served = ServedPrompts()
    served.add([Prompt("chat-1", "hello")], "chat", 0)
    assert served.measured_reuse([], [Prompt("mix-9", "hello")], "mix", 0).in_earlier_corpus == 1

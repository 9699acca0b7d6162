import json

import pytest

from vocab.errors import ConfigError
from workers.load.prompts import Prompt, TooFewPrompts, distinct, load_corpus, prompt_seed, schedule


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


# --- corpora by content (issue 30) ---------------------------------------------------------------


def test_a_corpus_is_hashed_by_its_bytes_file_or_folder(tmp_path):
    import hashlib

    from workers.load.prompts import content_sha256, read_corpus

    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n')
    assert content_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert read_corpus(path).sha256 == content_sha256(path)
    folder = tmp_path / "saved"
    (folder / "sub").mkdir(parents=True)
    (folder / "data.arrow").write_bytes(b"rows")
    (folder / "sub" / "state.json").write_text("{}")
    before = content_sha256(folder)
    (folder / "sub" / "state.json").rename(folder / "sub" / "other.json")
    assert content_sha256(folder) != before


def test_a_corpus_that_is_not_the_planned_one_stops_the_cell_with_one_line(tmp_path):
    from vocab.cells import Cell
    from workers.cell import run_cell
    from workers.context import RunContext
    from workers.load.prompts import CorpusChanged, check_planned, read_corpus

    path = tmp_path / "corpora" / "code_complete.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"def f{i}():"}) + "\n" for i in range(40)))
    corpus = read_corpus(path)
    check_planned(corpus, "code_complete", path, corpus.sha256)  # the planned bytes: nothing to say
    check_planned(corpus, "code_complete", path, None)  # nothing planned: nothing checked
    planned = "0123456789abcdef" * 4
    with pytest.raises(CorpusChanged) as caught:
        check_planned(corpus, "code_complete", path, planned, node="gpu-node-7")
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(
        f"node gpu-node-7: corpus 'code_complete' ({path}) has sha256 {corpus.sha256[:16]}"
    )
    assert "the driver planned 0123456789abcdef" in line and "python -m assets" in line
    # The worker stops the cell there, before its engine is sent anything (no engine needed to show it).
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config

    cell: Cell = next(
        c for c in expand(to_config(compose_config(["experiment=smoke"]))) if "code_complete" in c.label
    )
    assert cell.corpus.path == "corpora/code_complete.jsonl"
    ctx = RunContext(
        "s1", tmp_path / "store", tmp_path, tmp_path, tmp_path, corpus_sha256={"code_complete": planned}
    )
    with pytest.raises(CorpusChanged, match="the driver planned 0123456789abcdef"):
        run_cell(cell, None, ctx)

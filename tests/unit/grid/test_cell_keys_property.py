"""Property tests: a cell key is a pure function of everything that affects results."""

import dataclasses
import json
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from vocab.cells import Cell, EngineSpec
from vocab.schema import CorpusSpec, EngineConfig, LeverSpec, LoadSpec, ModelSpec

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)

loads = st.builds(
    LoadSpec,
    concurrency=st.integers(1, 512),
    max_tokens=st.integers(1, 16384),
    num_prompts=st.integers(1, 4096),
    warmup_requests=st.integers(0, 256),
    temperature=st.floats(0, 2, allow_nan=False),
    seed=st.integers(0, 2**31),
    ignore_eos=st.booleans(),
    warmup_ignore_eos=st.booleans(),
)
models = st.builds(
    ModelSpec, name=names, path=names, tp=st.integers(1, 8), dtype=st.sampled_from(["auto", "bfloat16"])
)
levers = st.builds(
    LeverSpec,
    name=names,
    spec_method=st.sampled_from([None, "suffix"]),
    async_scheduling=st.sampled_from([None, True, False]),
)
corpora = st.builds(CorpusSpec, name=names, path=names, endpoint=st.sampled_from(["chat", "completions"]))
engines = st.builds(
    EngineConfig,
    max_model_len=st.integers(256, 32768),
    enforce_eager=st.booleans(),
    max_num_seqs=st.one_of(st.none(), st.integers(1, 1024)),
)
cells = st.builds(
    lambda m, lv, k, e, c, ld, r: Cell(EngineSpec(m, lv, k, e), c, ld, r),
    models,
    levers,
    st.integers(0, 16),
    engines,
    corpora,
    loads,
    st.integers(0, 9),
)

# (path to a dataclass inside a cell, field, new-value function)
MUTATIONS = [
    ("load", "max_tokens", lambda v: v + 1),
    ("load", "concurrency", lambda v: v + 1),
    ("load", "temperature", lambda v: v + 0.5),
    ("load", "ignore_eos", lambda v: not v),
    ("load", "warmup_ignore_eos", lambda v: not v),
    ("corpus", "path", lambda v: v + "x"),
    ("corpus", "endpoint", lambda v: "chat" if v == "completions" else "completions"),
    ("engine_spec.model", "path", lambda v: v + "x"),
    ("engine_spec.model", "tp", lambda v: v + 1),
    ("engine_spec.lever", "async_scheduling", lambda v: {None: True, True: False, False: None}[v]),
    ("engine_spec.engine", "max_model_len", lambda v: v + 1),
    ("engine_spec.engine", "enforce_eager", lambda v: not v),
    ("engine_spec", "k", lambda v: v + 1),
    ("", "repeat", lambda v: v + 1),
]


def mutate(cell, path, field, change):
    def rebuild(obj, parts):
        if not parts:
            return dataclasses.replace(obj, **{field: change(getattr(obj, field))})
        child = getattr(obj, parts[0])
        return dataclasses.replace(obj, **{parts[0]: rebuild(child, parts[1:])})

    return rebuild(cell, [p for p in path.split(".") if p])


@settings(max_examples=60, deadline=None)
@given(cells, st.sampled_from(MUTATIONS))
def test_any_result_affecting_change_changes_the_key(cell, mutation):
    assert mutate(cell, *mutation).key != cell.key


@settings(max_examples=60, deadline=None)
@given(cells)
def test_equal_cells_have_equal_keys(cell):
    twin = Cell(
        EngineSpec(
            dataclasses.replace(cell.engine_spec.model),
            dataclasses.replace(cell.engine_spec.lever),
            cell.engine_spec.k,
            dataclasses.replace(cell.engine_spec.engine),
        ),
        dataclasses.replace(cell.corpus),
        dataclasses.replace(cell.load),
        cell.repeat,
    )
    assert twin.key == cell.key


@settings(max_examples=60, deadline=None)
@given(cells, st.integers(1, 10_000))
def test_launch_settings_do_not_change_the_key(cell, timeout_s):
    engine = dataclasses.replace(cell.engine_spec.engine, start_timeout_s=timeout_s, command=["x", "serve"])
    moved = dataclasses.replace(cell, engine_spec=dataclasses.replace(cell.engine_spec, engine=engine))
    assert moved.key == cell.key


def test_keys_match_in_a_fresh_interpreter_with_another_hash_seed():
    cell = Cell(
        EngineSpec(
            ModelSpec(name="m", path="p"), LeverSpec(name="suffix", spec_method="suffix"), 8, EngineConfig()
        ),
        CorpusSpec(name="c", path="c.jsonl"),
        LoadSpec(),
        0,
    )
    code = (
        "from vocab.cells import *; from vocab.schema import *;"
        "lever = LeverSpec(name='suffix', spec_method='suffix');"
        "spec = EngineSpec(ModelSpec(name='m', path='p'), lever, 8, EngineConfig());"
        "print(Cell(spec, CorpusSpec(name='c', path='c.jsonl'), LoadSpec(), 0).key)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin"},
    )
    assert out.stdout.strip() == cell.key
    assert json.dumps(cell.key) == f'"{cell.key}"' and len(cell.key) == 16


def test_load_fields_added_later_leave_every_existing_key_as_it_was():
    # load.warmup_ignore_eos (issue 44) is in the key only when set: a store written before it resumes
    # with the same keys. These are the keys this cell had at fe23899, before the field.
    spec = EngineSpec(
        ModelSpec(name="m", path="p"), LeverSpec(name="suffix", spec_method="suffix"), 8, EngineConfig()
    )
    corpus = CorpusSpec(name="c", path="c.jsonl")
    assert [Cell(spec, corpus, LoadSpec(), r).key for r in (0, 2)] == ["234e4336f7c10b67", "f01b6c425ea6d862"]
    full = Cell(spec, corpus, LoadSpec(warmup_ignore_eos=True), 0)
    assert full.key != "234e4336f7c10b67"

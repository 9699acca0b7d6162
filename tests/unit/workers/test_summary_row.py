"""The cell's row is a typed record (store/records.py: CellSummary) written as summary.parquet had
its columns before (issue 39): the same names in the same order, each with the Arrow type of the
type it declares, null where its value is None (the writer infers the types, as it always did)."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from store.read import attempts
from store.records import CellSummary
from workers.runner import run_group

# The columns the writer puts before the row's own (store/writer.py: TAG_FIELDS; cell_key is the row's).
TAGS = ["schema_version", "session_id", "cell_key", "attempt_id"]
ARROW = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}


def written_before() -> dict[str, str]:
    """Column -> Arrow type, from summary_columns.txt (captured before the row was a record)."""
    lines = (Path(__file__).parent / "summary_columns.txt").read_text().splitlines()
    return dict(line.split(" ", 1) for line in lines if line and not line.startswith("#"))


def declared() -> dict[str, tuple[pa.DataType, bool]]:
    """Column -> (the Arrow type of its declared type, whether it may be None)."""
    hints = typing.get_type_hints(CellSummary)
    out = {}
    for field in dataclasses.fields(CellSummary):
        hint = hints[field.name]
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        kept = [a for a in args if a is not type(None)]
        assert len(kept) == 1, f"{field.name}: {hint}"
        base = kept[0]
        listed = typing.get_origin(base) is list
        arrow = pa.list_(ARROW[typing.get_args(base)[0]]) if listed else ARROW[base]
        out[field.name] = (arrow, len(kept) < len(args))
    return out


def test_the_record_declares_the_columns_written_before_in_their_order_and_types():
    before = written_before()
    fields = declared()
    assert TAGS + [name for name in fields if name != "cell_key"] == list(before)
    for name, (arrow, nullable) in fields.items():
        if before[name] == "null":  # no captured cell filled it: its type is read from the code
            assert nullable, name
        elif before[name] == "list<element: null>":  # an empty list
            assert pa.types.is_list(arrow), name
        else:
            assert str(arrow) == before[name], name


def test_a_written_row_has_the_declared_columns_with_their_types(fake_group, tmp_path):
    group, ctx = fake_group()
    assert [o.status for o in run_group(group, ctx)] == ["ok"]
    (attempt,) = attempts(tmp_path / "store")[0]
    table = pq.read_table(attempt.folder / "summary.parquet")
    row = table.to_pylist()[0]
    fields = declared()
    assert table.column_names == TAGS + [name for name in fields if name != "cell_key"]
    for name, (arrow, nullable) in fields.items():
        written = table.schema.field(name).type
        if row[name] is None:
            assert nullable and written == pa.null(), name
        elif row[name] == []:
            assert written == pa.list_(pa.null()), name
        else:
            assert written == arrow, name


def test_a_column_missing_or_unknown_does_not_make_a_row():
    columns = {name: None for name in declared()}
    with pytest.raises(TypeError):
        CellSummary(**{**columns, "not_a_column": 1})
    del columns["valid"]
    with pytest.raises(TypeError):
        CellSummary(**columns)

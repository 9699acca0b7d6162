"""Issue 45 item 1: one rule for every user string that becomes a path component in the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.errors import StoreError
from store.layout import StoreLayout, component_problem

UNSAFE = [
    "",
    " ",
    ".",
    "..",
    "../../../x",
    "/tmp/x",
    "a/b",
    "a\\b",
    "..\\x",
    "a\x00b",
    "a\nb",
    "a\x1bb",
    "a\udcffb",  # an undecodable byte as Python keeps it (surrogateescape)
    "a\u200bb",  # zero-width space: not printable
    ".hidden",
    "-rf",
    "x" * 201,
]
SAFE = [
    "smoke",
    "unnamed",
    "20261206T101500Z-a1b2c3",
    "tune-3f2a-suffix",
    "llama31_8b_shaped",
    "K=8,v2@h200",
    "é",
]


@pytest.mark.parametrize("value", UNSAFE)
def test_an_unsafe_component_is_refused_naming_key_value_and_fix(value):
    problem = component_problem("name", value)
    assert problem is not None
    assert problem.startswith(f"name {value!r} ")
    assert "letters, digits" in problem  # the fix: what a name may hold
    assert "\n" not in problem  # one line, whatever the value holds


@pytest.mark.parametrize("value", SAFE)
def test_a_plain_name_passes(value):
    assert component_problem("name", value) is None


@pytest.mark.parametrize("value", ["../../../x", "/tmp/x", "a\x00b"])
def test_the_layout_refuses_to_join_an_unsafe_component(tmp_path: Path, value):
    layout = StoreLayout(tmp_path / "store")
    for join in (
        layout.report_file,
        layout.session_file,
        layout.logs_dir,
        layout.equivalence_file,
        layout.confirmation_file,
    ):
        with pytest.raises(StoreError):
            join(value)
    assert layout.report_file("smoke") == tmp_path / "store" / "reports" / "smoke.html"

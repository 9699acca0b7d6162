import ast
import random

from assets.corpus_code import code_complete_rows, code_edit_rows, edit_instruction, humaneval_rows, stub_rows
from assets.corpus_sources import CODE_PACKAGES, COMPLETE_PACKAGES
from tests.unit.assets.conftest import check_rows

MODULE = '''
def _helper(x):
    return x


def public(a, b):
    """Documented."""
    total = 0
'''


def test_humaneval_rows_are_raw_prompts(counter):
    rows = list(humaneval_rows(counter, 1984))
    check_rows(rows, 1984, chat=False)
    assert len(rows) == 164
    assert rows[0]["id"] == "HumanEval/0" and rows[0]["license"] == "MIT"


def test_code_edit_rows_carry_the_whole_file_and_its_licence(counter, few_packages):
    rows = list(code_edit_rows(counter, 1984))
    check_rows(rows, 1984)
    assert {r["source"].split(" ")[0] for r in rows} <= {"requests", "jmespath"}
    assert {r["license"] for r in rows} <= {"Apache-2.0", "MIT"}
    content = rows[0]["messages"][0]["content"]
    assert "```python\n" in content and "Reply with the complete updated file" in content


def test_edit_instruction_names_a_symbol_the_file_defines():
    seen = {edit_instruction(MODULE, random.Random(seed)) for seed in range(40)}
    renames = [s for s in seen if s and s.startswith("Rename")]
    assert renames and all("`_helper`" in s or "`public`" in s for s in renames)
    assert edit_instruction("def broken(:\n", random.Random(0)) is None
    ast.parse(MODULE)


def test_stubs_end_at_the_docstring_of_a_real_function(counter, few_packages):
    rows = list(stub_rows(counter, 1984))
    check_rows(rows, 1984, chat=False)
    assert {r["source"].split(" ")[0] for r in rows} == {"python-dateutil"}
    for row in rows:
        last = row["prompt"].rstrip("\n").splitlines()[-1]
        module = ast.parse(row["prompt"] + last[: len(last) - len(last.lstrip())] + "pass\n")
        func = module.body[-1]
        assert isinstance(func, ast.FunctionDef) and ast.get_docstring(func)
        assert row["id"].endswith(f":{func.name}") and len(func.body) == 2


def test_code_complete_is_humaneval_then_stubs_of_packages_no_other_corpus_shows(counter, few_packages):
    rows = list(code_complete_rows(counter, 1984))
    assert [r["id"] for r in rows[:164]] == [f"HumanEval/{i}" for i in range(164)]
    assert len(rows) > 164 and all(r["id"].startswith("stub-") for r in rows[164:])
    assert not set(COMPLETE_PACKAGES) & set(CODE_PACKAGES)

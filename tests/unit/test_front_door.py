"""Issue 47 item 1: the README is a front door, and every command in it is run by a test.

Here each command of the README's ```bash blocks is run at the cheapest level that proves it still
works: a make target exists and `make -n` plans it; a `python -m grid` command answers `--help` and
its overrides compose (grid.config.compose: a typo fails here, nothing is launched); the tune's
overrides compose with its experiment and its model resolves; a notebook exists and jupyter is
installed. COVERED names the tests that run a command for real (engine, cluster, notebooks).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

import pytest

from grid.__main__ import main as grid_main
from grid.config.compose import compose_config
from vocab.paths import project_path

README = project_path("README.md").read_text()
# Commands an engine, cluster or notebook test runs for real (a prefix of the command -> the test).
COVERED = {
    "make demo": "tests/engine/test_grid_run.py (python -m grid run experiment=smoke on the CPU engine)",
    "$PY -m grid plan experiment=smoke $mine": "tests/engine/test_readme_own_trace.py",
    "$PY -m grid run experiment=smoke $mine": "tests/engine/test_readme_own_trace.py",
    "ray job submit": "tests/scheduling/test_ray_job.py (a head started with ray start, token auth on)",
    "LEVER_GRID_STORE=results .venv/bin/jupyter execute": "tests/report/test_notebooks.py (nbclient)",
    "$PY -m experiments.tune": "tests/unit/experiments/test_tune_stages.py (stand-in grid)",
}
# Arguments that are the command's own, not Hydra overrides (grid/__main__.py pop_format, --quick).
NOT_OVERRIDES = re.compile(r"^(format=|--)")


def bash_lines() -> list[str]:
    """Every command of the README's ```bash blocks: continuations joined, comments dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def expand(line: str, variables: dict[str, str]) -> list[str]:
    """The line's words with $PY, $PWD and the block's own variables ($mine, $load) put in."""
    for name, value in {**variables, "PWD": str(project_path("."))}.items():
        line = line.replace(f"${name}", value)
    return shlex.split(line.replace("$PY", sys.executable))


def commands() -> list[tuple[str, list[str]]]:
    """(the README's line, its words), the block's assignments (`mine="..."`) applied, not listed."""
    variables: dict[str, str] = {}
    found = []
    for line in bash_lines():
        if assigned := re.fullmatch(r'(\w+)="(.*)"', line):
            variables[assigned.group(1)] = assigned.group(2)
            continue
        found.append((line, expand(line, variables)))
    return found


def grid_args(words: list[str]) -> list[str] | None:
    """The arguments after `python -m grid` (after `--` for a Ray Job), None if it is not one."""
    if "--" in words:
        words = words[words.index("--") + 1 :]
    for at in range(len(words) - 1):
        if words[at : at + 2] == ["-m", "grid"]:
            return words[at + 2 :]
    return None


def test_the_readme_is_a_front_door():
    lines = README.splitlines()
    assert len(lines) <= 250, len(lines)
    for recipe in ("Your own trace and model", "A grid on a Ray cluster", "Resume after a failure",
                   "Read the answer in a notebook", "Tune one model to a `vllm serve` line"):  # fmt: skip
        heading = next(line for line in lines if line.startswith("### ") and recipe in line)
        anchor = re.sub(r"[^a-z0-9 -]", "", heading.lstrip("# ").lower()).replace(" ", "-")
        assert f"(#{anchor})" in README, f"the table of contents lacks {heading!r}"
    image = re.search(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert image is not None and project_path(image.group(1)).is_file(), "the README's picture"
    # Every page it links exists (docs/README.md is the index of the rest).
    for target in re.findall(r"\]\(((?:docs|examples)/[^)#]+)\)", README):
        assert project_path(target).exists(), target


def test_the_layering_sentence_matches_test_layers():
    """The README said vocab/ is at the bottom; vocab/paths.py imports store.fs (test_layers.py)."""
    from tests.unit.test_layers import FORBIDDEN

    assert "vocab" in FORBIDDEN["store"] and "store" not in FORBIDDEN["vocab"]
    assert "`store/` is at the bottom (it imports none of the project), `vocab/`" in README
    assert (
        "at\nthe bottom of the stack" not in README
        and "`vocab/` (schemas, cells, engine groups, errors, paths), at" not in README
    )


def test_every_front_door_command_is_checked_or_covered():
    checked = [line for line, _ in commands()]
    assert len(checked) >= 12, checked
    for line, words in commands():
        covered = [test for prefix, test in COVERED.items() if line.startswith(prefix)]
        assert words[0] in ("make", "ray") or "-m" in words or covered, f"no check for {line!r}"


@pytest.mark.parametrize(("line", "words"), commands(), ids=[line[:60] for line, _ in commands()])
def test_each_front_door_command_works_at_the_cheapest_level(line, words, capsys):
    if words[0] == "make":
        target = words[1]
        assert re.search(rf"^{re.escape(target)}:", project_path("Makefile").read_text(), re.M), line
        planned = subprocess.run(
            ["make", "-n", target], cwd=project_path("."), capture_output=True, text=True, timeout=60
        )
        assert planned.returncode == 0, planned.stderr
    elif (args := grid_args(words)) is not None:
        command, rest = args[0], args[1:]
        assert grid_main([command, *rest, "--help"]) == 0, line
        assert capsys.readouterr().out.startswith(f"usage: python -m grid {command}")
        compose_config([arg for arg in rest if not NOT_OVERRIDES.match(arg)])
    elif "experiments.tune" in words:
        from experiments.tune import main as tune_main
        from experiments.tune_procedure import compose_tune
        from grid.config.catalog import catalog_of
        from vocab.schema import ModelSpec

        overrides = words[words.index("experiments.tune") + 1 :]
        assert tune_main([*overrides, "--help"]) == 0
        cfg = compose_tune(overrides)
        grid_cfg = compose_config([f"experiment={cfg.experiment}", *cfg.grid_overrides])
        catalog_of(grid_cfg).load(ModelSpec, cfg.model)
    elif any(word.endswith("jupyter") for word in words):
        notebook = next(word for word in words if word.endswith(".ipynb"))
        assert project_path(notebook).is_file(), notebook
        # make setup installs jupyter into .venv; here, beside the interpreter running the tests.
        beside = shutil.which("jupyter", path=str(project_path(sys.executable).parent))
        assert beside is not None, "jupyter is not installed (make setup installs it)"
    else:
        pytest.fail(f"no cheap check for {line!r}")


def test_covered_commands_name_tests_that_exist():
    for test in COVERED.values():
        path = test.split(" ")[0]
        assert project_path(path).exists(), path

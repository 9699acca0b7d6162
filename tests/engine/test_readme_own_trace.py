"""The README's "Try it on this machine" lines, run as a user would (issue 18).

The block after `<!-- own-trace-example -->` in the README (a user's trace and
a model from a folder of their own, given on the command line) is run with
bash from the project root, line by line as written, with one addition: each
`$PY -m grid ...` line gets `paths.store=<a temporary folder>` so the test
writes nothing into the checkout's results. `plan` must read the trace through
the preflight; `run` must measure one real CPU cell of it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from store.read import attempts, connect
from tests.closing import all_valid, measured_none_failed
from vocab.paths import project_path

pytestmark = pytest.mark.engine

MARK = "<!-- own-trace-example -->"
TRACE = project_path("examples/support_trace.jsonl")


def readme_lines() -> list[str]:
    """The shell lines of the README block after MARK."""
    text = project_path("README.md").read_text()
    assert MARK in text, f"README has no {MARK} block"
    block = re.search(r"```bash\n(.*?)```", text[text.index(MARK) :], re.S)
    assert block is not None, "no bash block after the marker"
    return [line for line in block.group(1).splitlines() if line.strip()]


def with_store(line: str, store: str) -> str:
    return f"{line} paths.store={store}" if line.startswith("$PY -m grid") else line


def run_lines(lines: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the lines in one bash (they share a variable), stopping at the first that fails."""
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=project_path("."),
        env={**_env(), "PY": sys.executable},
        capture_output=True,
        text=True,
        timeout=900,
    )


def _env() -> dict[str, str]:
    """This environment without a user conf folder of the developer's own (the README sets none)."""
    return {k: v for k, v in os.environ.items() if k != "LEVER_GRID_CONF"}


def test_the_readme_block_is_a_trace_and_a_model_of_the_users_own_in_two_commands():
    lines = readme_lines()
    commands = [line for line in lines if line.startswith("$PY -m grid")]
    assert [c.split()[3] for c in commands] == ["plan", "run"], lines
    assert "examples/support_trace.jsonl" in "\n".join(lines) and TRACE.is_file()


def test_plan_then_run_of_the_readme_measure_the_users_trace(tmp_path):
    store = tmp_path / "store"
    lines = [with_store(line, str(store)) for line in readme_lines()]
    plan_at = next(i for i, line in enumerate(lines) if " grid plan " in line)

    plan = run_lines(lines[: plan_at + 1])
    assert plan.returncode == 0, plan.stdout[-3000:] + plan.stderr[-3000:]
    # The preflight read the trace: its 40 distinct prompts, none too long, nothing repeated.
    row = next(line for line in plan.stdout.splitlines() if line.strip("│ ").startswith("support"))
    assert [cell.strip() for cell in row.strip("│").split("│")] == ["support", "40", "4", "36", "0", "0", "0"]
    assert not store.exists() or not list(store.rglob("manifest.json")), "plan wrote cells"

    result = run_lines(lines)
    output = result.stdout + result.stderr
    # One cell measured, none failed. Whether it is VALID is the machine's: on CI's starved 2-core
    # box (2026-12-04) the client's event loop lagged 279 ms at p99 and 4 of 36 streams errored, so
    # the gates made it INVALID, which is not done (issue 38): the run then exits 1 and names it.
    assert measured_none_failed(output, 1), output[-4000:]
    valid = all_valid(output, 1)
    assert result.returncode == (0 if valid else 1), output[-4000:]
    assert valid or "INVALID mine/van/support/r0" in output, output[-4000:]
    found, problems = attempts(store)
    # An INVALID first attempt for the host's sake is measured once again on a fresh engine
    # (run.host_invalid_reruns=1; CI, 2026-12-06): the cell is its last attempt, the one before INVALID.
    found = sorted(found, key=lambda a: (a.written_at, a.attempt_id))
    assert not problems and [a.status for a in found] in (["ok"], ["ok", "ok"]), (found, problems)
    assert all(a.valid is False for a in found[:-1]), found
    last = found[-1]
    assert last.valid is valid, (last, output[-4000:])
    requests = pd.read_parquet(last.folder / "requests.parquet")
    measured = requests[requests["phase"] == "measure"]
    assert len(measured) == 36, measured
    # A VALID cell has no errored stream (the gate counts them); an INVALID one shows what they were.
    errors = measured[measured["error_type"].notna()][["error_type", "error_message"]]
    assert errors.empty or not valid, errors.to_string()
    print("errored streams:", errors.to_string() if len(errors) else "none")
    assert (measured[measured["error_type"].isna()]["completion_tokens"] > 0).all()
    # Every prompt sent is one of the trace's tickets, and the cell is the user's model on the trace.
    ticket_ids = {json.loads(line)["id"] for line in TRACE.read_text().splitlines()}
    assert set(requests["prompt_id"]) <= ticket_ids
    cells = (
        connect(store)
        .execute("select model, corpus, lever from cells where attempt_id = ?", [last.attempt_id])
        .df()
    )
    assert cells.to_dict("records") == [{"model": "mine", "corpus": "support", "lever": "van"}]

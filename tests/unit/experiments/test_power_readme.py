"""The docs' power tables are what `make power` prints: the Makefile's arguments give the very
headers the docs quote (draws, seed, repeats), and the procedure table lists the rows the code runs.
They moved from the README (issue 47): the procedure's to docs/tune.md, the study's to docs/decisions.md."""

import shlex
from pathlib import Path

import experiments.procedure_power as pp
import experiments.study_power as sp

ROOT = Path(__file__).resolve().parents[3]
# The pages that quote `make power`'s tables, read as one text (each table is found by its header line).
README = "\n\n".join((ROOT / "docs" / page).read_text() for page in ("tune.md", "decisions.md"))


def make_power_args() -> dict[str, list[str]]:
    """module -> its arguments, from the Makefile's `power` target."""
    lines = (ROOT / "Makefile").read_text().split("\npower:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    out = {}
    for line in lines:
        words = shlex.split(line.strip())
        if "-m" in words:
            at = words.index("-m")
            out[words[at + 1]] = [w for w in words[at + 2 :] if w != "$(ARGS)"]
    return out


def readme_block(first_line: str) -> list[str]:
    """The docs' table rows (lines starting with '|') after `first_line`, up to the next blank line
    after the table."""
    assert first_line in README, f"the docs lack the line make power prints: {first_line!r}"
    after = README.split(first_line, 1)[1].lstrip("\n").split("\n\n", 1)[0]
    return [line for line in after.splitlines() if line.startswith("| ")][1:]  # past the heading row


def test_the_procedure_table_in_the_readme_is_the_one_make_power_prints():
    args = pp.parse_args(make_power_args()["experiments.procedure_power"])
    assert args.draws >= 2000  # the rows that state <= 5 % false deploy rest on 2,000 tunes or more
    rows = readme_block(pp.header(args.repeats, args.draws, args.power_draws, args.seed))
    labels = [tuple(cell.strip() for cell in row.strip("|").split("|")[:4]) for row in rows]
    expected = [
        (s.noise.name, s.gate.name if s.gate else "off", "yes" if s.w4a4 else "no", str(s.n))
        for s in pp.table_rows(args.repeats)
    ]
    assert labels == expected
    stage = f"One stage (suffix vs van), {pp.OFFSET.name}, {args.stage_draws:,} draws per cell"
    assert stage in README


def test_the_study_table_in_the_readme_is_the_one_make_power_prints():
    args = sp.parse_args(make_power_args()["experiments.study_power"])
    assert len(readme_block(sp.header(args.repeats, args.draws, args.seed))) == 2 * len(pp.NOISES)

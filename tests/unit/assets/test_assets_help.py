"""Issue 47 item 2: `python -m assets --help` is its usage and the keys it reads, not a Hydra error."""

from __future__ import annotations

import assets.__main__ as assets_main


def test_help_lists_the_keys_it_reads_with_their_meanings(capsys):
    assert assets_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m assets")
    for key in assets_main.READS:
        (line,) = [line for line in out.splitlines() if line.strip().startswith(f"{key} ")]
        assert len(line.split(key, 1)[1].strip()) > 10, line  # a meaning, not only the name
    assert "vLLM's --max-model-len" in out

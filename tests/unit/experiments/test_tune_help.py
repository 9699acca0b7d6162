"""Issue 38: `experiments.tune --help` leads with an example that can decide, and the tune refuses
stages that cannot (1 repeat), as it refuses confirm_repeats=1."""

import shlex

import pytest

import experiments.tune as tune_module
from experiments.tune import main
from vocab.errors import ConfigError


class Reached(Exception):
    """The tune passed its checks and got as far as the procedure (no engine runs here)."""


def first_example(capsys) -> list[str]:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.strip().startswith("python -m experiments.tune"))
    assert "duration" in out and "3 hours" in out, out
    return shlex.split(line)[3:]


def test_the_first_example_can_decide(capsys, monkeypatch):
    args = first_example(capsys)
    assert any("grid.repeats=3" in a for a in args), args

    def reached(t):
        raise Reached

    monkeypatch.setattr(tune_module, "procedure", reached)
    with pytest.raises(Reached):  # its checks pass: repeats and the anchor
        tune_module.tune(args)


def test_stages_of_one_repeat_are_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr(tune_module, "procedure", lambda t: pytest.fail("the procedure ran"))
    with pytest.raises(ConfigError, match=r"the stages run grid.repeats=1: .* at least 2 repeats"):
        tune_module.tune(["model=tiny", 'grid_overrides=["grid.anchor.enabled=true","grid.repeats=1"]'])


@pytest.mark.parametrize("out_dir", ["/proc/x", "{file}/sub"])
def test_an_out_dir_that_cannot_be_written_is_refused_before_anything_runs(out_dir, tmp_path, monkeypatch):
    """Found by scripts/adversarial.py: out_dir=/proc/x started the tune, which could only fail at its end."""
    a_file = tmp_path / "plain"
    a_file.write_text("")
    monkeypatch.setattr(tune_module, "procedure", lambda t: pytest.fail("the procedure ran"))
    with pytest.raises(ConfigError, match=r"out_dir=.*point out_dir at a writable folder"):
        args = [f"out_dir={out_dir.format(file=a_file)}", 'grid_overrides=["grid.anchor.enabled=true"]']
        tune_module.tune(["model=tiny", *args])

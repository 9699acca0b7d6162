import shutil

import pytest

from grid.config.catalog import load_spec
from grid.config.compose import CONF_DIR
from vocab.errors import ConfigError
from vocab.schema import LeverSpec


def test_dynk_reads_its_k_set_from_dynamic_ks(tmp_path):
    assert load_spec(LeverSpec, "dynk").env["LEVER_DYNK_KS"] == "4,6,12"
    # Change the list in a copy of the file: the plugin's variable follows it.
    (tmp_path / "lever").mkdir()
    text = (CONF_DIR / "lever" / "dynk.yaml").read_text()
    text = text.replace("dynamic_ks: [4, 6, 12]", "dynamic_ks: [2, 8]")
    (tmp_path / "lever" / "dynk.yaml").write_text(text)
    assert load_spec(LeverSpec, "dynk", tmp_path).env["LEVER_DYNK_KS"] == "2,8"


def test_an_unknown_lever_names_the_known_ones(tmp_path):
    shutil.copytree(CONF_DIR / "lever", tmp_path / "lever")
    with pytest.raises(ConfigError, match=r"unknown lever 'nope': known levers are .*dynk"):
        load_spec(LeverSpec, "nope", tmp_path)

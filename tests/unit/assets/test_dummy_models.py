import json

from assets import dummy_models


def test_dummy_model_configs_are_written_once_and_have_llama31_8b_shapes(tmp_path):
    (path,) = dummy_models.ensure(tmp_path)
    config = json.loads(path.read_text())
    assert path.parent.name == "Llama-3.1-8B-shaped"
    shape = (config["hidden_size"], config["num_hidden_layers"], config["num_key_value_heads"])
    assert shape == (4096, 32, 8)
    assert config["vocab_size"] == 128256
    mtime = path.stat().st_mtime_ns
    dummy_models.ensure(tmp_path)
    assert path.stat().st_mtime_ns == mtime  # unchanged content is not rewritten

import json

from assets import dummy_models


def test_dummy_model_configs_are_written_once_and_have_llama31_8b_shapes(tmp_path):
    path = next(p for p in dummy_models.ensure(tmp_path) if p.parent.name == "Llama-3.1-8B-shaped")
    config = json.loads(path.read_text())
    shape = (config["hidden_size"], config["num_hidden_layers"], config["num_key_value_heads"])
    assert shape == (4096, 32, 8)
    assert config["vocab_size"] == 128256
    mtime = path.stat().st_mtime_ns
    dummy_models.ensure(tmp_path)
    assert path.stat().st_mtime_ns == mtime  # unchanged content is not rewritten


def test_the_70b_and_405b_fp8_shapes_are_written_too(tmp_path):
    paths = {p.parent.name: json.loads(p.read_text()) for p in dummy_models.ensure(tmp_path)}
    big = paths["Llama-3.1-70B-shaped"]
    assert (big["hidden_size"], big["num_hidden_layers"], big["num_attention_heads"]) == (8192, 80, 64)
    fp8 = paths["Llama-3.1-405B-FP8-shaped"]
    assert (fp8["hidden_size"], fp8["num_hidden_layers"]) == (16384, 126)
    quant = fp8["quantization_config"]
    assert quant["quant_method"] == "fbgemm_fp8"
    assert "model.layers.1.mlp.down_proj" not in quant["modules_to_not_convert"]  # FP8
    assert "model.layers.125.mlp.down_proj" in quant["modules_to_not_convert"]  # BF16

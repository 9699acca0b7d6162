"""Configs of models served with `--load-format dummy`: real shapes, random weights, no download.

Llama-3.1-8B's architecture as published in its config.json (4096 hidden, 32
layers, 32 heads with 8 KV heads, 14336 intermediate, 128256 vocabulary,
RoPE theta 500000 with llama3 scaling); the 70B's (8192 hidden, 80 layers, 64
heads, 28672 intermediate) and the 405B's (16384 hidden, 126 layers, 128 heads,
53248 intermediate) the same way, the 405B with Meta's FP8 checkpoint's
quantization (fbgemm_fp8: feed-forward weights in FP8, attention and the first
and last layers' feed-forward in BF16), so a dummy 405B takes the FP8 model's
memory and kernels. Timings on such a model are those of the real one; its
outputs are noise (on the H200 they looped on a few tokens, so suffix drafts
were accepted almost always).
"""

from __future__ import annotations

import json
from pathlib import Path

from store.atomic import write_atomic

LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "vocab_size": 128256,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "torch_dtype": "bfloat16",
}
LLAMA31_70B = {
    **LLAMA31_8B,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
}
LLAMA31_405B_LAYERS = 126


def _fbgemm_fp8_unconverted(layers: int) -> list[str]:
    """Modules Meta's Llama-3.1-405B-Instruct-FP8 keeps in BF16: every attention projection, the
    first and last layers' feed-forward, the LM head."""
    attention = [f"model.layers.{i}.self_attn.{p}_proj" for i in range(layers) for p in "qkvo"]
    edges = [f"model.layers.{i}.mlp.{p}_proj" for i in (0, layers - 1) for p in ("gate", "up", "down")]
    return [*attention, *edges, "lm_head"]


LLAMA31_405B_FP8 = {
    **LLAMA31_8B,
    "hidden_size": 16384,
    "intermediate_size": 53248,
    "num_hidden_layers": LLAMA31_405B_LAYERS,
    "num_attention_heads": 128,
    "quantization_config": {
        "quant_method": "fbgemm_fp8",
        "activation_scale_ub": 1200.0,
        "modules_to_not_convert": _fbgemm_fp8_unconverted(LLAMA31_405B_LAYERS),
    },
}
MODELS = {
    "Llama-3.1-8B-shaped": LLAMA31_8B,
    "Llama-3.1-70B-shaped": LLAMA31_70B,
    "Llama-3.1-405B-FP8-shaped": LLAMA31_405B_FP8,
}


def ensure(models_dir: Path) -> list[Path]:
    """Write each dummy model's config.json under models_dir (idempotent)."""
    written = []
    for name, config in MODELS.items():
        target = models_dir / name / "config.json"
        text = json.dumps(config, indent=2, sort_keys=True) + "\n"
        if not target.is_file() or target.read_text() != text:
            write_atomic(target, lambda tmp, text=text: tmp.write_text(text))
        written.append(target)
    return written

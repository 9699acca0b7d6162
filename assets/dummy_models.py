"""Configs of models served with `--load-format dummy`: real shapes, random weights, no download.

Llama-3.1-8B's architecture as published in its config.json (4096 hidden, 32
layers, 32 heads with 8 KV heads, 14336 intermediate, 128256 vocabulary,
RoPE theta 500000 with llama3 scaling). Timings on such a model are those of
the real one; its outputs are noise, so drafts are almost never accepted.
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
MODELS = {"Llama-3.1-8B-shaped": LLAMA31_8B}


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

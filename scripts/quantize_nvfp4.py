"""Make the NVFP4 (W4A4) checkpoint a model's `w4a4` lever serves: llm-compressor, AWQ then GPTQ.

    pip install llmcompressor            # in an environment with a GPU and the model's weights
    python scripts/quantize_nvfp4.py --model /models/Llama-3.1-8B-Instruct \\
        --calibration .cache/data/corpora/chat.jsonl --out /models/Llama-3.1-8B-Instruct-NVFP4

Recipe (the study's): AWQ smooths activation outliers into the weights, then GPTQ quantises
every Linear layer but lm_head to NVFP4: FP4 (E2M1) values with an FP8 scale per group of
16 and an FP32 global scale, for weights and activations. Calibration prompts come from
one of this project's corpora (or your own trace), never from a hub. The output is a
compressed-tensors checkpoint; set it as the model's `quantized_variant` in conf/model/.
See docs/w4a4.md for what runs where (Hopper: weight-only FP4 through Marlin).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

IGNORE = ["lm_head"]


def calibration_texts(path: Path, tokenizer: Any, n: int) -> list[str]:
    """The first n prompts of a corpus JSONL, rendered with the model's chat template."""
    texts = []
    with path.open() as handle:
        for line in handle:
            row = json.loads(line)
            if "messages" in row:
                texts.append(tokenizer.apply_chat_template(row["messages"], tokenize=False))
            elif "prompt" in row:
                texts.append(row["prompt"])
            if len(texts) == n:
                break
    if not texts:
        raise SystemExit(f"{path}: no prompts to calibrate with")
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="local path of the bf16 weights")
    parser.add_argument("--calibration", required=True, type=Path, help="corpus JSONL (id + prompt/messages)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--max-seq-len", type=int, default=2048)
    args = parser.parse_args()

    # Imported here: the harness itself never needs these (or a GPU).
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.awq import AWQModifier
    from llmcompressor.modifiers.quantization import GPTQModifier
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype="auto")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    texts = calibration_texts(args.calibration, tokenizer, args.samples)
    dataset = Dataset.from_dict({"text": texts}).map(
        lambda row: tokenizer(
            row["text"], max_length=args.max_seq_len, truncation=True, add_special_tokens=False
        ),
        remove_columns=["text"],
    )
    recipe = [
        AWQModifier(targets=["Linear"], scheme="NVFP4", ignore=IGNORE),
        GPTQModifier(targets=["Linear"], scheme="NVFP4", ignore=IGNORE),
    ]
    oneshot(
        model=model,
        dataset=dataset,
        recipe=recipe,
        max_seq_length=args.max_seq_len,
        num_calibration_samples=len(texts),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, save_compressed=True)
    tokenizer.save_pretrained(args.out)
    print(f"NVFP4 checkpoint -> {args.out}; set it as quantized_variant in conf/model/<model>.yaml")


if __name__ == "__main__":
    main()

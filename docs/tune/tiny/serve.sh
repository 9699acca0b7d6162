#!/usr/bin/env bash
# van
env DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 LD_PRELOAD=/work/main/.venv/lib/libiomp5.so PYTHONUNBUFFERED=1 TRANSFORMERS_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 VLLM_NO_USAGE_STATS=1 \
  /work/main/.venv/bin/python -m vllm.entrypoints.openai.api_server --model /work/main/.cache/models/SmolLM2-135M-Instruct --served-model-name tiny --host 0.0.0.0 --port 8000 --api-key ${VLLM_API_KEY} --dtype float32 --max-model-len 2048 --max-num-seqs 32 --enforce-eager --async-scheduling

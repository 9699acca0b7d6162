#!/usr/bin/env bash
# suffix K=8
env DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 TRANSFORMERS_OFFLINE=1 VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm VLLM_LOG_STATS_INTERVAL=1 VLLM_NO_USAGE_STATS=1 \
  python3 -m vllm.entrypoints.openai.api_server --model /root/detached/tree/.cache/models/SmolLM2-135M-Instruct --served-model-name tiny --host 0.0.0.0 --port 8000 --api-key ${VLLM_API_KEY} --dtype bfloat16 --max-model-len 4096 --gpu-memory-utilization 0.5 --speculative-config '{"method": "suffix", "num_speculative_tokens": 8}' --compilation-config '{"cudagraph_mode": "FULL_AND_PIECEWISE", "max_cudagraph_capture_size": 512, "pass_config": {"fuse_allreduce_rms": false}}' --cudagraph-metrics

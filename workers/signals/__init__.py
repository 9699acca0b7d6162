"""What is read from the server and the host while a cell runs, and the gates that judge it.

counters and metrics: vLLM's /metrics, before and after the measured load; server_load:
its gauges during it; cudagraph_log and dynk_log: CUDA-graph and dynk lines in the engine
log; gpu_telemetry and host: the GPUs (NVML) and the host's CPU placement and waits;
gates: whether a window counts.
"""

"""The engine's lifecycle and its control channel.

args: the one place a spec becomes `vllm serve` argv and environment; process: the
launch (start, relaunch, stop) and its process tree (tree); log: reading its log;
registry and guard: no engine outlives its owner; reset: the control channel that
returns an engine to fresh between cells and selects its draft hook; served: what the
launch has been sent since it was last fresh.
"""

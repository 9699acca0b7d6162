"""vLLM plugins for the levers vLLM lacks: drafts padded to K (`kpad`) and a dynamic-K controller (`dynk`).

Loaded by vLLM through the `vllm.general_plugins` entry points in every vLLM
process; each `register()` is a no-op unless its lever's environment variable
is set. Only `kpad.register`, `dynk.register` and `proposer_patch` touch vLLM,
and only inside functions: the harness may import the pure modules
(`pad_policy`, `controller`, `log_lines`, `patch_points`) without pulling vLLM in.
`patch_points` is the one table of what the plugins touch in vLLM; `patch_check` checks it
against an installed vLLM (tests, `make compat`: docs/compat.md).
"""

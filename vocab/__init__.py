"""The config vocabulary every layer shares: schemas, cells, engine groups, errors, paths.

It sits at the bottom of the stack (it imports only store.fs, a leaf): conf/ ->
grid/ (expand, plan, ledger, schedule) -> workers/ -> store -> analysis all
speak it, and none of workers/, store/ or analysis/ imports grid/, which is
expansion, planning and orchestration only.
"""

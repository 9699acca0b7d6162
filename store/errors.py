"""The project's root exception and the store's own, at the bottom layer so that both sides share them.

The store raises StoreError and cannot import vocab (tests/unit/test_layers.py); vocab.errors
re-exports both, so `except vocab.errors.StoreError` and `except store.fs.StoreError` catch one
class, and a command's `except GridError` catches a store error too. No imports: vocab.errors
stays light (no pyarrow at a command's start).
"""


class GridError(Exception):
    """Root of every error this project raises on purpose."""


class StoreError(GridError, ValueError):
    """The results store could not be read or written, or a store URL or option cannot be used.

    A ValueError too: callers that cope with a bad value (grid/plan/store_costs.py) catch it as one.
    """

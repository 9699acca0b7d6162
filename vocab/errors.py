"""The project's exceptions: one root, a few specific ones, each message says the fix.

GridError and StoreError live in store/errors.py (the store, below vocab, raises StoreError):
one class each, whichever module it is imported from.
"""

from store.errors import GridError, StoreError

__all__ = ["ConfigError", "EngineError", "GridError", "StoreError"]


class ConfigError(GridError):
    """A config, name or override is wrong; raised before anything is launched."""


class EngineError(GridError):
    """The engine would not start, died, or could not be stopped."""

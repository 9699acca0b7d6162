"""The project's exceptions: one root, a few specific ones, each message says the fix."""


class GridError(Exception):
    """Root of every error this project raises on purpose."""


class ConfigError(GridError):
    """A config, name or override is wrong; raised before anything is launched."""


class EngineError(GridError):
    """The engine would not start, died, or could not be stopped."""


class StoreError(GridError):
    """The results store could not be read or written."""

"""Test-wide settings that must precede any import of Ray."""

import os

# Every Ray node the tests start (local or fake multi-node) binds to 127.0.0.1:
# with "clusters" off Ray uses loopback, as it does on macOS/Windows. Read by
# Ray at import time, so it is set here, before any test module imports Ray.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

"""Real-engine tests of the kpad/dynk plugins: the CPU build of vLLM serving SmolLM2.

Each engine costs about a minute to start on a 2-core machine and ~4 GB of RAM, so
one module fixture starts them one after another, records what each did, and stops
it before the next; the tests only assert on those records.
"""

from __future__ import annotations

import pytest

from tests.plugins_engine.serve import MODEL_DIR


@pytest.fixture(scope="session", autouse=True)
def _assets_ready():
    if not (MODEL_DIR / "config.json").is_file():
        pytest.fail("SmolLM2 is not converted; run `make assets` (make test does it)")

"""Real-engine tests of the kpad/dynk plugins: the CPU build of vLLM serving SmolLM2.

Each engine costs about a minute to start on a 2-core machine and ~4 GB of RAM, so
the fixtures start them one after another, record what each did, and stop it before
the next; the tests only assert on those records. Six launches in all: van and kpad4
(test_plugins_engine.py), suffix, bestkpad and dynk at K=8 and the switched one
(test_reset_engine.py); the bestkpad and dynk launches also serve test_plugins_engine's
kpad8 and dynk cells, after a reset (k8_launches below), as the grid shares a launch.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins_engine.serve import MODEL_DIR


@pytest.fixture(scope="session", autouse=True)
def _assets_ready():
    if not (MODEL_DIR / "config.json").is_file():
        pytest.fail("SmolLM2 is not converted; run `make assets` (make test does it)")


@pytest.fixture(scope="session")
def k8_launches(tmp_path_factory) -> dict[str, Any]:
    """suffix, bestkpad and dynk at K=8, one launch each (test_reset_engine.run_lever): its fresh,
    stale and reset cells, then, reset again, test_plugins_engine's kpad8 or dynk cell on it."""
    from tests.plugins_engine import test_plugins_engine as plugins
    from tests.plugins_engine import test_reset_engine as reset

    work_dir = tmp_path_factory.mktemp("k8_launches")
    cell_of = {lever: name for name, lever in plugins.ON_K8_LAUNCH.items()}
    out = {}
    for lever, (spec_config, lever_env) in reset.LEVERS.items():
        after = None
        if lever in cell_of:
            after = lambda engine, s=spec_config, e=lever_env: plugins.measure(engine, s, e)  # noqa: E731
        out[lever] = reset.run_lever(lever, work_dir, plugins.LOG_ENV, after)
    return out

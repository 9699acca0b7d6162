import shutil
import subprocess

import pytest

from tests.unit.analysis.synthetic_store import build_store
from vocab.paths import PROJECT_ROOT

INSTALL = PROJECT_ROOT / "scripts" / "install_chromium.sh"


@pytest.fixture(scope="session")
def synthetic_store(tmp_path_factory):
    """The hand-made store of tests/unit/analysis/synthetic_store.py, with equivalence verdicts."""
    return build_store(tmp_path_factory.mktemp("store"))


@pytest.fixture(scope="session")
def chromium():
    """Path of a headless-capable chromium; installs it (scripts/install_chromium.sh) if missing.

    Skips, saying why, only when it cannot be installed here.
    """
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    done = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=900, check=False)
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        pytest.skip(f"chromium could not be installed by {INSTALL.name}: {' | '.join(tail)}")
    return found

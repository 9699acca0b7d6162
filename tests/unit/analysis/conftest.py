import pytest

from tests.unit.analysis.synthetic_store import build_store


@pytest.fixture(scope="session")
def synthetic_store(tmp_path_factory):
    """The hand-made store of synthetic_store.py (read-only for the tests)."""
    return build_store(tmp_path_factory.mktemp("store"))

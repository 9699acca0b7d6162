"""Test-wide settings that must precede any import of Ray."""

import os

# Every Ray node the tests start (local or fake multi-node) binds to 127.0.0.1:
# with "clusters" off Ray uses loopback, as it does on macOS/Windows. Read by
# Ray at import time, so it is set here, before any test module imports Ray.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# The fake S3 credentials the tests' moto server accepts (tests/s3server.py), set before
# any Ray node starts so that workers inherit them; a real AWS_* setting is kept.
from tests.s3server import FAKE_CREDENTIALS

for _key, _value in FAKE_CREDENTIALS.items():
    os.environ.setdefault(_key, _value)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def s3_endpoint():
    """host:port of a moto S3 server on 127.0.0.1 for the whole session (tests/s3server.py)."""
    from tests.s3server import moto_server, why_unavailable

    if (reason := why_unavailable()) is not None:
        pytest.skip(reason)
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3_url(s3_endpoint):
    """(url, store_options) of a fresh bucket on the local S3 server."""
    from tests.s3server import new_bucket, store_options

    return f"s3://{new_bucket(s3_endpoint)}/results", store_options(s3_endpoint)


@pytest.fixture(params=["local", "s3"])
def store_root(request, tmp_path):
    """The store as a local folder and as s3://bucket/results on the local S3 server."""
    from store.fs import open_store

    if request.param == "local":
        return tmp_path / "store"
    url, options = request.getfixturevalue("s3_url")
    return open_store(url, options)


# Seconds and tests per budgeted directory (tests/budgets.py), summed over setup, call and teardown.
_SPENT_S: dict[str, float] = {}
_TESTS: dict[str, int] = {}


def pytest_runtest_logreport(report):
    from tests.budgets import directory_of

    name = directory_of(report.nodeid)
    _SPENT_S[name] = _SPENT_S.get(name, 0.0) + report.duration
    if report.when == "setup":
        _TESTS[name] = _TESTS.get(name, 0) + 1


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    """The time each test directory took against its budget (tests/budgets.toml); over it warns only."""
    from tests.budgets import budget_table, load_budgets, over_budget

    if not _SPENT_S:
        return
    budgets = load_budgets()
    terminalreporter.section("time per test directory (budgets: tests/budgets.toml)")
    for line in budget_table(_SPENT_S, _TESTS, budgets):
        terminalreporter.write_line(line, red=line.endswith(("OVER", "tests/budgets.toml")))
    if over := over_budget(_SPENT_S, budgets):
        terminalreporter.write_line(
            f"over budget or without one: {', '.join(over)} (a warning, not a failure: see tests/budgets.py)",
            yellow=True,
        )

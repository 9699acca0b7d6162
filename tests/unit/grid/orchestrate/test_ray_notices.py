"""A local run's Ray start prints no token-auth notice through the live bar (grid/orchestrate/schedule.py)."""

from __future__ import annotations

import importlib
import logging

import pytest

from grid.orchestrate.schedule import TOKEN_NOTICE_LOGGER, quiet_token_notice


@pytest.fixture
def restore_level():
    logger = logging.getLogger(TOKEN_NOTICE_LOGGER)
    level = logger.level
    logger.setLevel(logging.NOTSET)  # as before any local run in this process quieted it
    yield
    logger.setLevel(level)


def test_the_notice_ray_logs_is_dropped_and_errors_are_not(restore_level):
    # The logger Ray's notice goes through (named after its module, which must still exist).
    logger = importlib.import_module(TOKEN_NOTICE_LOGGER).logger
    assert logger.isEnabledFor(logging.WARNING)
    quiet_token_notice()
    assert not logger.isEnabledFor(logging.WARNING)
    assert logger.isEnabledFor(logging.ERROR)

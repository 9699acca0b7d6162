"""Plugin settings from the environment the lever sets on the engine (conf/lever/*.yaml `env`)."""

from __future__ import annotations

import os

# How many decode steps between two summary lines in the engine log.
DEFAULT_LOG_EVERY_STEPS = 200


def enabled(name: str) -> bool:
    """True only for "1": any other value (unset, "0", "") leaves vLLM untouched."""
    return os.environ.get(name, "") == "1"


def int_setting(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.strip() else default


def float_setting(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    return float(raw) if raw.strip() else default


def ks_setting(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    """A comma-separated list of positive K values, e.g. "4,6,12"."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    ks = tuple(sorted({int(part) for part in raw.split(",") if part.strip()}))
    if not ks or ks[0] < 1:
        raise ValueError(f"{name}={raw!r}: expected positive integers, e.g. '4,6,12'")
    return ks

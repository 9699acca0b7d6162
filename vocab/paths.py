"""Resolve configured paths: relative ones are relative to the project root, not the cwd."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from store.fs import StoreRoot, is_url, open_store

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def project_path(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else PROJECT_ROOT / path


def store_path(value: str, options: Mapping[str, Any] | None = None) -> StoreRoot:
    """paths.store: a URL (s3://bucket/prefix) through pyarrow's filesystems, else a project path."""
    if is_url(value):
        return open_store(value, options)
    return open_store(project_path(value), options)


def data_path(value: str, options: Mapping[str, Any] | None = None) -> StoreRoot:
    """paths.data_dir: a URL (s3://bucket/prefix, e.g. a folder beside the results) read through the
    store's filesystems with paths.store_options, so every node reads one copy; else a project path."""
    if is_url(value):
        return open_store(value, options)
    return project_path(value)

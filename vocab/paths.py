"""Resolve configured paths: relative ones are relative to the project root, not the cwd."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from store.fs import StorePath, StoreRoot, is_url, open_store

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def project_path(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else PROJECT_ROOT / path


def store_path(value: str, options: Mapping[str, Any] | None = None, key: str = "paths.store") -> StoreRoot:
    """paths.store: a URL (s3://bucket/prefix) through pyarrow's filesystems, else a project path;
    `key` names the setting in a message (`stores[0]` of grid compare)."""
    if is_url(value):
        return open_store(value, options, key)
    # A local store has no options: those given configure an s3:// paths.data_dir (grid/config/compose.py
    # refuses options where neither is a URL).
    return open_store(project_path(value))


def data_path(value: str, options: Mapping[str, Any] | None = None) -> StoreRoot:
    """paths.data_dir: a URL (s3://bucket/prefix, e.g. a folder beside the results) read through the
    store's filesystems with paths.store_options, so every node reads one copy; else a project path."""
    if is_url(value):
        return open_store(value, options)
    return project_path(value)


def existing_store(
    value: str, options: Mapping[str, Any] | None = None, key: str = "paths.store"
) -> StoreRoot:
    """paths.store for a command that only reads it (status, summary, report, compare): a local path
    that is not a folder is an error (a mistyped path read as an empty store would say "0 cells", and
    `report` would create folders under it), and so is a URL store under which nothing lies (its
    bucket missing, or an empty prefix: object stores have no empty folders)."""
    from vocab.errors import StoreError

    root = store_path(value, options, key)
    if isinstance(root, Path) and not root.is_dir():
        what = "is a file, not a store folder" if root.exists() else "does not exist"
        raise StoreError(
            f"{key} {root} {what}; check the path (a store is the folder `python -m grid run` "
            "wrote, ./results by default)"
        )
    if isinstance(root, StorePath) and (why := root.store.absence()) is not None:
        raise StoreError(
            f"{key} {root} holds no store: {why}; check the URL and paths.store_options (a store is "
            "the prefix `python -m grid run` wrote)"
        )
    return root

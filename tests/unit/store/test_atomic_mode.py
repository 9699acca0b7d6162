"""Store files and folders get the mode the umask gives any new file, not mkstemp's private 0600."""

import os
import stat

import pyarrow as pa
import pytest

from store.atomic import write_atomic, write_json, write_parquet


@pytest.fixture
def umask():
    """Set a umask for the test and restore the process's own afterwards."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "file_mode", "folder_mode"), [(0o022, 0o644, 0o755), (0o002, 0o664, 0o775)])
def test_files_and_folders_follow_the_umask(tmp_path, umask, mask, file_mode, folder_mode):
    umask(mask)
    json_file = write_json(tmp_path / "sessions" / "s.json", {"a": 1})
    parquet_file = write_parquet(tmp_path / "cells" / "k" / "a" / "summary.parquet", pa.table({"x": [1]}))
    assert mode(json_file) == file_mode
    assert mode(parquet_file) == file_mode
    for folder in (tmp_path / "sessions", tmp_path / "cells", tmp_path / "cells" / "k" / "a"):
        assert mode(folder) == folder_mode


def test_the_umask_is_read_without_changing_it(umask):
    from store.atomic import current_umask

    umask(0o027)
    assert current_umask() == 0o027
    assert current_umask() == 0o027


def test_a_writer_that_makes_its_file_anew_still_gets_the_umask_mode(tmp_path, umask):
    umask(0o022)

    def recreate(tmp):
        tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)

    assert mode(write_atomic(tmp_path / "x.bin", recreate)) == 0o644

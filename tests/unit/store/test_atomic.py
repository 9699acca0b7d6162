import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from store.atomic import TMP_PREFIX, write_atomic, write_json, write_parquet


def test_parquet_write_is_readable_and_leaves_no_temp(tmp_path):
    target = tmp_path / "sub" / "t.parquet"
    write_parquet(target, pa.table({"x": [1, 2]}))
    assert pq.read_table(target).column("x").to_pylist() == [1, 2]
    assert not [p for p in target.parent.iterdir() if p.name.startswith(TMP_PREFIX)]


def test_failed_write_keeps_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "m.json"
    write_json(target, {"v": 1})

    def half_then_crash(tmp):
        tmp.write_text('{"v": 2')
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, half_then_crash)
    assert target.read_text().replace(" ", "").replace("\n", "") == '{"v":1}'
    assert os.listdir(tmp_path) == ["m.json"]


def test_unwritable_folder_raises_and_creates_nothing(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user that ignores permissions")
        with pytest.raises(PermissionError):
            write_json(folder / "x.json", {})
    finally:
        folder.chmod(0o700)

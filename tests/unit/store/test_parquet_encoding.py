"""store/atomic.py writes its tables with zstd, nanosecond time columns as deltas: smaller, same values."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from store.atomic import parquet_options, write_parquet


def streams(n_streams: int = 64, chunks: int = 400, seed: int = 7) -> pa.Table:
    """A requests-like table: per stream a send time and rising chunk times ~2 ms apart, with jitter."""
    rng = random.Random(seed)
    send, chunk_ns, tokens = [], [], []
    for i in range(n_streams):
        t = 1_765_000_000_000_000_000 + i * 3_000_000
        send.append(t)
        times = []
        for _ in range(chunks):
            t += 2_000_000 + rng.randrange(-300_000, 300_000)
            times.append(t)
        chunk_ns.append(times)
        tokens.append([1] * chunks)
    return pa.table({
        "session_id": ["s1"] * n_streams,
        "send_ns": pa.array(send, pa.int64()),
        "chunk_ns": pa.array(chunk_ns, pa.list_(pa.int64())),
        "chunk_tokens": pa.array(tokens, pa.list_(pa.int32())),
        "ttft_ms": [12.5] * n_streams,  # not a *_ns column: keeps its dictionary
    })  # fmt: skip


def encodings(path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    group = pq.ParquetFile(path).metadata.row_group(0)
    columns = (group.column(i) for i in range(group.num_columns))
    return {c.path_in_schema.split(".")[0]: (c.compression, c.encodings) for c in columns}


def test_ns_columns_are_deltas_and_the_rest_keep_dictionaries(tmp_path: Path) -> None:
    path = tmp_path / "requests.parquet"
    write_parquet(path, streams())
    found = encodings(path)
    assert {compression for compression, _ in found.values()} == {"ZSTD"}
    assert "DELTA_BINARY_PACKED" in found["chunk_ns"][1] and "DELTA_BINARY_PACKED" in found["send_ns"][1]
    assert "DELTA_BINARY_PACKED" not in found["chunk_tokens"][1]
    assert "RLE_DICTIONARY" in found["session_id"][1]
    assert (
        parquet_options(pa.schema([("ttft_ms", pa.float64()), ("label_ns", pa.string())]))["column_encoding"]
        == {}
    )  # only integer time columns: a string or float named *_ns is left as it is


def test_every_reader_gets_the_same_values_in_fewer_bytes(tmp_path: Path) -> None:
    table = streams()
    ours, plain = tmp_path / "ours.parquet", tmp_path / "plain.parquet"
    write_parquet(ours, table)
    pq.write_table(table, plain)  # pyarrow's defaults, as the store wrote before
    assert pq.read_table(ours).equals(table)
    assert pd.read_parquet(ours).equals(pd.read_parquet(plain))
    query = "select sum(len(chunk_ns)), sum(chunk_ns[len(chunk_ns)] - send_ns), max(chunk_ns[1]) from '{}'"
    assert duckdb.sql(query.format(ours)).fetchall() == duckdb.sql(query.format(plain)).fetchall()
    assert ours.stat().st_size < 0.7 * plain.stat().st_size

"""Avro data files stream through `iter_batches`: the source is read a block and a read-ahead at a
time and at most ``batch_rows`` records are decoded at once, so memory is set by configuration,
not by the file's size; the batches equal `read`'s table; broken files name themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.formats import avro_block_stream, avro_format
from lake_assets.formats.avro_block_stream import AvroBlockStream
from lake_assets.formats.avro_container import _parse_header, _read_long, _write_long
from lake_assets.formats.avro_format import AVRO
from lake_assets.formats.data_file_read import iter_data_file, read_data_file

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("d", pa.float64())])


class CountingSource:
    """A file source that records every read: the largest, and the bytes read in all."""

    def __init__(self, path: Path) -> None:
        self._f = path.open("rb")
        self.reads: list[int] = []

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.reads.append(len(data))
        return data

    @property
    def total(self) -> int:
        return sum(self.reads)

    def close(self) -> None:
        self._f.close()


def _avro_file(tmp_path: Path, rows: int, compression: str = "zstd", **opts: str) -> Path:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"],
                         options={"bucket": "1", "file.format": "avro", "file.compression": compression,
                                  "write-buffer-size": "1 gb", "target-file-size": "1 gb", **opts})
    t.write_arrow(pa.table({"id": range(rows), "v": [f"value-{i * 7919 % 100_003:08d}" for i in range(rows)],
                            "d": [i / 3 for i in range(rows)]}, schema=SCHEMA))
    (path,) = (tmp_path / "wh").rglob("data-*.avro")
    return path


def _blocks(path: Path) -> list[tuple[int, int]]:
    """(records, bytes) of every block of the file."""
    with path.open("rb") as f:
        stream = AvroBlockStream(f)
        _, sync = stream.header()
        return [(count, len(block)) for count, block in stream.blocks(sync)]


# zstandard for file.compression zstd, snappy for any other (as Java), or avro.codec
CODECS = {"zstandard": ("zstd", {}), "snappy": ("lz4", {}), "null": ("zstd", {"avro.codec": "null"}),
          "deflate": ("zstd", {"avro.codec": "deflate"})}


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_batches_equal_the_whole_file_read(tmp_path: Path, codec: str) -> None:
    compression, opts = CODECS[codec]
    path = _avro_file(tmp_path, 30_000, compression, **opts)
    assert len(_blocks(path)) > 5
    io = Catalog(str(tmp_path / "wh")).file_io
    whole = read_data_file(io, str(path))
    for batch_rows in (1, 999, 4096, 100_000):
        if batch_rows == 1:
            batches = [b for _, b in zip(range(50), iter_data_file(io, str(path), batch_rows=1), strict=False)]
            assert all(b.num_rows == 1 for b in batches)
            assert pa.concat_tables(batches).equals(whole.slice(0, 50))
            continue
        batches = list(iter_data_file(io, str(path), batch_rows=batch_rows))
        assert all(b.num_rows <= batch_rows for b in batches)
        assert sum(b.num_rows > 0 for b in batches) == -(-whole.num_rows // batch_rows)
        assert pa.concat_tables(batches).equals(whole)
    projected = list(iter_data_file(io, str(path), ["_KEY_id", "v"], batch_rows=5000))
    assert pa.concat_tables(projected).equals(whole.select(["_KEY_id", "v"]))


def test_the_source_is_read_a_block_and_a_read_ahead_at_a_time(tmp_path: Path, monkeypatch: Any) -> None:
    """The whole file used to be read at once and 64K records decoded at a time; now no read is
    bigger than a block or the read-ahead, at each batch only what the batches so far needed,
    plus a block and a read-ahead, has been read, whatever the file's size, and no more records
    than a batch are decoded at once."""
    decoded_at_once: list[int] = []
    original = avro_format._to_arrow

    def to_arrow(records: list[Any], *args: Any) -> pa.Table:
        decoded_at_once.append(len(records))
        return original(records, *args)

    monkeypatch.setattr(avro_format, "_to_arrow", to_arrow)
    path = _avro_file(tmp_path, 120_000, **{"avro.codec": "null"})
    blocks = _blocks(path)
    largest_block = max(size for _, size in blocks)
    size = path.stat().st_size
    read_ahead = avro_block_stream.READ_AHEAD_BYTES
    assert size > 20 * (read_ahead + largest_block)  # a file much bigger than the bound
    source = CountingSource(path)
    try:
        decoded = 0
        ends = [0]  # bytes from the first block to the end of each block
        for _, block_size in blocks:
            ends.append(ends[-1] + block_size + 20 + 16)  # at most 20 bytes of counts, the marker
        records = [count for count, _ in blocks]
        for batch in AVRO.iter_batches(source, None, batch_rows=1000):
            decoded += batch.num_rows
            # the blocks that hold the records decoded so far, and at most the next one
            needed = next(i for i in range(len(records) + 1) if sum(records[:i]) >= decoded)
            header = 4096
            assert source.total <= header + ends[min(needed + 1, len(blocks))] + read_ahead
            assert max(source.reads) <= max(read_ahead, largest_block + 16 + 20)
        assert decoded == 120_000
        assert source.total == size
        assert max(decoded_at_once) == 1000
    finally:
        source.close()


def test_a_header_bigger_than_the_read_ahead_is_read_whole(tmp_path: Path, monkeypatch: Any) -> None:
    path = _avro_file(tmp_path, 5000)
    io = Catalog(str(tmp_path / "wh")).file_io
    whole = read_data_file(io, str(path))
    monkeypatch.setattr(avro_block_stream, "READ_AHEAD_BYTES", 7)
    assert pa.concat_tables(list(iter_data_file(io, str(path), batch_rows=300))).equals(whole)


def _huge_block_size(data: bytes) -> bytes:
    """``data`` with its first block claiming 2**60 bytes."""
    _, _, pos = _parse_header(data)
    count, after_count = _read_long(data, pos)
    _, after_size = _read_long(data, after_count)
    return data[:pos] + _write_long(count) + _write_long(2**60) + data[after_size:]


@pytest.mark.parametrize("damage", ["truncated-block", "truncated-header", "bad-sync", "bad-magic", "empty",
                                    "huge-block-size"])
def test_broken_files_raise_corrupt_naming_the_file(tmp_path: Path, damage: str) -> None:
    path = _avro_file(tmp_path, 20_000)
    data = path.read_bytes()
    broken = {
        "truncated-block": data[: len(data) - 100],
        "truncated-header": data[:40],
        "bad-sync": data[:-1] + bytes([data[-1] ^ 0xFF]),
        "bad-magic": b"Obj\x02" + data[4:],
        "empty": b"",
        "huge-block-size": _huge_block_size(data),  # read in bounded steps, never allocated
    }[damage]
    path.write_bytes(broken)
    io = Catalog(str(tmp_path / "wh")).file_io
    with pytest.raises(CorruptMetadataError, match=rf"Data file .*{path.name} is corrupt"):
        list(iter_data_file(io, str(path), batch_rows=1000))
    with pytest.raises(CorruptMetadataError, match=rf"Data file .*{path.name} is corrupt"):
        read_data_file(io, str(path))

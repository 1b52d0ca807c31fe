"""64-bit deletion vectors (``deletion-vectors.bitmap64``, Paimon 1.2 on; docs/format.md §4.6).

Neither pypaimon 2.1 nor pypaimon-rust 0.4 writes 64-bit vectors (both write 32-bit ones into a
table carrying the option) and Paimon Java 0.9 predates them, so the bytes here come from Java's
serializer itself:

* ``ICEBERG_GOLDEN``: the golden files of Iceberg Java's ``TestBitmapPositionDeleteIndex``
  (apache/iceberg ``core/src/test/resources/org/apache/iceberg/deletes/*.bin``, since Nov 2024),
  written by ``BitmapPositionDeleteIndex.serialize``. Paimon's ``Bitmap64DeletionVector.serializeTo``
  (1.2 to HEAD) is that serializer ("mostly copied from iceberg"): int32 big-endian size, magic
  ``1681511377`` little-endian, ``RoaringPositionBitmap`` / ``OptimizedRoaringBitmap64`` serialized
  little-endian after ``runLengthEncode``, int32 big-endian CRC-32 of magic and bitmap.
* tests/differential/test_deletion_vector_64_java.py: random vectors through Java's RoaringBitmap,
  framed as Paimon HEAD's ``Bitmap64DeletionVector`` source frames them.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError, InvalidDataError, UnsupportedFeatureError
from lake_assets.ops.deletion_vectors import VectorLoader, deleted_rows, snapshot_index
from lake_assets.spec.deletion_vector import (
    MAX_POSITION_64,
    add_positions,
    deleted_mask,
    encode_index_file,
    new_vector,
    read_vector,
)
from lake_assets.spec.manifest import DeletionVectorRange

BITMAP_OFFSET = 2**32  # positions of the second 32-bit bitmap (high key 1)
CONTAINER_OFFSET = 2**16


def _pos(bitmap: int, container: int, value: int) -> int:
    return bitmap * BITMAP_OFFSET + container * CONTAINER_OFFSET + value


# name -> (positions, the vector's bytes as Iceberg Java wrote them: size, magic, bitmap, CRC)
ICEBERG_GOLDEN = {
    "small-alternating-values": (
        [1, 3, 5, 7, 9],
        "0000002ad1d339640100000000000000000000003a30000001000000000004001000000001000300050007000900b3fb20be",
    ),
    "small-and-large-values": (
        [100, 101, 2**31 - 1 + 100, 2**31 - 1 + 101],
        "00000030d1d339640100000000000000000000003a300000020000000000010000800100180000001c000000640065006300"
        "640015eb1c7c",
    ),
    # array, run-compressible array and bitset containers in each of two 32-bit bitmaps
    "all-container-types": (
        [_pos(0, 0, 5), _pos(0, 0, 7), *range(_pos(0, 1, 1), _pos(0, 1, 1000)),
         *range(_pos(0, 2, 1), _pos(0, 2, CONTAINER_OFFSET - 1)), _pos(1, 0, 10), _pos(1, 0, 20),
         *range(_pos(1, 1, 10), _pos(1, 1, 500)), *range(_pos(1, 2, 1), _pos(1, 2, CONTAINER_OFFSET - 1))],
        "00000056d1d339640200000000000000000000003b30020006000001000100e6030200fdff0500070001000100e60301000100"
        "fdff010000003b30020006000001000100e9010200fdff0a00140001000a00e90101000100fdffc89be397",
    ),
}


@pytest.mark.parametrize("name", sorted(ICEBERG_GOLDEN))
def test_reads_and_writes_the_bytes_javas_serializer_writes(name: str) -> None:
    positions, hexed = ICEBERG_GOLDEN[name]
    golden = bytes.fromhex(hexed)
    index_file = b"\x01" + golden
    # the manifest's length of a 64-bit vector counts its size int and CRC (Java's serializeTo)
    rng = DeletionVectorRange("data-1.parquet", 1, len(golden), None)
    got = read_vector(index_file, rng, "index-x")
    assert isinstance(got, BitMap64) and list(got) == sorted(positions)
    vector = new_vector(np.array(positions, dtype=np.int64), bitmap64=True)
    vector.run_optimize()  # as compaction does before writing (Java's runLengthEncode)
    data, ranges = encode_index_file({"data-1.parquet": vector})
    assert data == index_file
    assert ranges == (rng._replace(cardinality=len(positions)),)


def test_an_empty_64_bit_vector_reads_as_empty() -> None:
    golden = bytes.fromhex("0000000cd1d339640000000000000000bf18480c")  # Iceberg's empty-position-index.bin
    got = read_vector(b"\x01" + golden, DeletionVectorRange("d", 1, len(golden), None), "index-x")
    assert isinstance(got, BitMap64) and not got
    assert deleted_mask(got, 5) is None


def test_javas_empty_bitmaps_of_missing_high_keys_are_read() -> None:
    """Java writes a 32-bit bitmap for every high key up to the largest (an empty one in a gap);
    pyroaring leaves the empty ones out. Each form reads as the same positions."""
    empty, one = BitMap().serialize(), BitMap([7]).serialize()
    java_body = ((2).to_bytes(8, "little") + (0).to_bytes(4, "little") + empty
                 + (1).to_bytes(4, "little") + one)
    body = (1681511377).to_bytes(4, "little") + java_body
    data = b"\x01" + len(body).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")
    got = read_vector(data, DeletionVectorRange("d", 1, len(body) + 8, None), "index-x")
    assert list(got) == [BITMAP_OFFSET + 7]
    ours, _ = encode_index_file({"d": got})
    assert list(read_vector(ours, DeletionVectorRange("d", 1, len(ours) - 1, None), "index-x")) == [BITMAP_OFFSET + 7]


def test_one_file_holds_both_forms_each_with_its_own_length() -> None:
    narrow, wide = new_vector([1, 3, 5, 7]), new_vector([2, 4, 2**31 + 9], bitmap64=True)
    data, ranges = encode_index_file({"a.parquet": narrow, "b.parquet": wide})
    a, b = ranges
    assert a.length == 28  # magic + bitmap, as Java 0.9 records it (test_deletion_vector.JAVA_FILE)
    assert data[1:1 + 4 + a.length + 4] == encode_index_file({"a.parquet": narrow})[0][1:]
    assert b.offset == 1 + 4 + a.length + 4 and b.offset + b.length == len(data)
    assert data[b.offset + 4:b.offset + 8] == (1681511377).to_bytes(4, "little")
    back = {r.data_file: read_vector(data, r, "index-x") for r in ranges}
    assert type(back["a.parquet"]) is BitMap and list(back["a.parquet"]) == [1, 3, 5, 7]
    assert type(back["b.parquet"]) is BitMap64 and list(back["b.parquet"]) == [2, 4, 2**31 + 9]


def test_damaged_64_bit_vectors_are_corrupt_metadata() -> None:
    golden = bytes.fromhex(ICEBERG_GOLDEN["small-alternating-values"][1])
    data, rng = b"\x01" + golden, DeletionVectorRange("d", 1, len(golden), None)
    flipped = bytearray(data)
    flipped[30] ^= 1
    with pytest.raises(CorruptMetadataError, match="checksum"):
        read_vector(bytes(flipped), rng, "index-x")
    # a 64-bit vector's range taken as a 32-bit one's (no frame counted) does not match its size int
    with pytest.raises(CorruptMetadataError, match=r"size 42 does not match the manifest's length 42 \(a 64-bit"):
        read_vector(data, rng._replace(length=len(golden) - 8), "index-x")
    with pytest.raises(CorruptMetadataError, match="outside"):
        read_vector(data[:-2], rng, "index-x")
    # a count of bitmaps past the bytes there are
    body = (1681511377).to_bytes(4, "little") + (3).to_bytes(8, "little")
    bad = b"\x01" + len(body).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")
    with pytest.raises(CorruptMetadataError, match="not a valid roaring bitmap"):
        read_vector(bad, DeletionVectorRange("d", 1, len(body) + 8, None), "index-x")
    # a high key past OptimizedRoaringBitmap64's limit (Integer.MAX_VALUE - 1)
    body = (1681511377).to_bytes(4, "little") + BitMap64([(2**31 - 1) << 32]).serialize()
    bad = b"\x01" + len(body).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")
    with pytest.raises(CorruptMetadataError, match="past the 64-bit form's limit"):
        read_vector(bad, DeletionVectorRange("d", 1, len(body) + 8, None), "index-x")


def test_64_bit_vectors_take_positions_past_the_32_bit_limit_and_check_them() -> None:
    vector = new_vector(np.array([5, 2**31, 2**33], dtype=np.int64), "data-7.parquet", bitmap64=True)
    assert isinstance(vector, BitMap64) and list(vector) == [5, 2**31, 2**33]
    add_positions(vector, np.array([6, 2**32], dtype=np.int64), "data-7.parquet")
    assert isinstance(vector, BitMap64) and list(vector) == [5, 6, 2**31, 2**32, 2**33]
    with pytest.raises(InvalidDataError, match=r"Row position -1 of data-7\.parquet is negative"):
        add_positions(vector, np.array([-1, 3], dtype=np.int64), "data-7.parquet")
    with pytest.raises(UnsupportedFeatureError, match="does not fit a 64-bit deletion vector"):
        new_vector([MAX_POSITION_64 + 1], "data-7.parquet", bitmap64=True)
    assert list(new_vector([MAX_POSITION_64], bitmap64=True)) == [MAX_POSITION_64]
    assert list(vector) == [5, 6, 2**31, 2**32, 2**33], "a refused add changed the vector"
    small = new_vector([0, 2], bitmap64=True)
    assert deleted_mask(small, 3).tolist() == [False, True, False]
    with pytest.raises(CorruptMetadataError, match="has 2 rows"):
        deleted_mask(small, 2, "data-1.parquet")


SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _stored(table) -> dict[str, BitMap | BitMap64]:  # type: ignore[no-untyped-def]
    """Each data file's vector as the latest snapshot's index files store it (bytes decoded)."""
    out = {}
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        for e in entries:
            data = table.store.file_io.read_bytes(table.store.paths.index_file(e.file_name))
            for rng in e.dv_ranges or ():
                out[rng.data_file] = read_vector(data, rng, e.file_name)
    return out


def test_switching_the_option_keeps_old_vectors_in_their_form_and_gives_new_ones_the_tables(tmp_path) -> None:
    """As Java's BucketedDvMaintainer: a vector read keeps its class when more rows are deleted;
    a file without one gets the table's form; one index file then holds both."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true",
                                  "compaction.delete-ratio-threshold": "0.99"})
    model: dict[int, str] = {}

    def write(keys: range, tag: str) -> dict[str, tuple[type, list[int]]]:
        t.write_arrow(_rows(keys, tag))
        model.update({k: f"{tag}{k}" for k in keys})
        assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == model
        return {name: (type(v), list(v)) for name, v in _stored(t).items()}

    write(range(1000), "a")  # one file on the top level
    (top,) = write(range(0, 100, 2), "b")  # a file of 50 rows below it; its even rows < 100 marked in the top
    t.update_schema().set_option("deletion-vectors.bitmap64", "true").commit()
    stored = write(range(0, 100, 4), "c")  # marks rows 0, 2, .. 48 of the 50-row file: a new, 64-bit vector
    (middle,) = set(stored) - {top}
    assert stored[middle] == (BitMap64, list(range(0, 50, 2)))
    stored = write(range(100, 300), "d")  # more rows of the top file: its vector stays 32-bit
    assert stored[top] == (BitMap, [*range(0, 100, 2), *range(100, 300)])
    assert stored[middle] == (BitMap64, list(range(0, 50, 2)))
    # and back: the 64-bit vector stays 64-bit and is still read; a new one is 32-bit again
    t.update_schema().set_option("deletion-vectors.bitmap64", "false").commit()
    stored = write(range(150, 250, 5), "e")  # rows of the file "d" wrote: its first vector
    assert stored[middle] == (BitMap64, list(range(0, 50, 2)))
    (newest,) = set(stored) - {top, middle}
    assert stored[newest] == (BitMap, list(range(50, 150, 5)))
    assert stored[top] == (BitMap, [*range(0, 100, 2), *range(100, 300)])
    health = t.health().to_pylist()
    assert sum(r["deletion_vector_rows"] for r in health) == sum(len(v) for _, v in stored.values())


def test_deleted_rows_counted_from_64_bit_vectors_without_a_recorded_cardinality(tmp_path) -> None:
    """Index manifests without ``_CARDINALITY`` (as Java 0.9 writes them) get their counts from the
    vectors themselves, 64-bit ones included (health's delete ratios, compaction's delete-heavy files)."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true",
                                  "deletion-vectors.bitmap64": "true"})
    t.write_arrow(_rows(range(500), "a"))
    t.write_arrow(_rows(range(0, 500, 5), "b"))
    entries = [e for es in snapshot_index(t.store, t.latest_snapshot()).values() for e in es]
    recorded = deleted_rows(t.store, entries)
    bare = [dataclasses.replace(e, dv_ranges=tuple(r._replace(cardinality=None) for r in e.dv_ranges or ()))
            for e in entries]
    assert deleted_rows(t.store, bare, VectorLoader(t.store)) == recorded
    assert sum(recorded.values()) == 100


def test_a_streams_full_phase_applies_64_bit_vectors(tmp_path) -> None:
    """A latest-full stream starts from the table as batch reads see it: 64-bit vectors applied."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true",
                                  "deletion-vectors.bitmap64": "true"})
    t.write_arrow(_rows(range(400), "a"))
    t.write_arrow(_rows(range(0, 400, 3), "b"))
    assert {type(v) for v in _stored(t).values()} == {BitMap64}
    stream, reader = t.stream(mode="latest-full"), t.change_reader()
    first = pa.concat_tables([reader.read(s) for b in stream.poll(max_snapshots=10) for s in b.splits])
    got = {r["k"]: r["v"] for r in first.to_pylist()}
    assert first.num_rows == 400 and got == {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert [got[k] for k in (0, 1, 3)] == ["b0", "a1", "b3"]

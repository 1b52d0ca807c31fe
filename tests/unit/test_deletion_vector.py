"""Deletion-vector index files: the bytes Paimon Java 0.9 writes, both ways (docs/format.md §4.6).

The 64-bit form (``deletion-vectors.bitmap64``): tests/unit/test_deletion_vector_64.py."""

from __future__ import annotations

import numpy as np
import pytest

from lake_assets.errors import CorruptMetadataError, InvalidDataError, UnsupportedFeatureError
from lake_assets.spec.deletion_vector import (
    deleted_mask,
    encode_index_file,
    new_vector,
    read_vector,
    serialize_vector,
)
from lake_assets.spec.manifest import DeletionVectorRange

# An index file Paimon Java 0.9 wrote (tests/differential/test_deletion_vectors_java.py makes such
# tables): rows 1, 3, 5 and 7 of one data file deleted. Its index manifest entry said offset 1, length 28.
JAVA_FILE = bytes.fromhex("010000001c5e43f2d03a3000000100000000000300100000000100030005000700a9151f29")
JAVA_RANGE = DeletionVectorRange("data-b7c58cc2-4dbc-4cf4-a528-61fc6f19b095-0.parquet", 1, 28, None)


def test_reads_the_file_java_wrote() -> None:
    assert list(read_vector(JAVA_FILE, JAVA_RANGE, "index-x")) == [1, 3, 5, 7]


def test_writes_the_bytes_java_writes() -> None:
    data, ranges = encode_index_file({JAVA_RANGE.data_file: new_vector([1, 3, 5, 7])})
    assert data == JAVA_FILE
    assert ranges == (JAVA_RANGE._replace(cardinality=4),)


def test_several_vectors_round_trip_and_empty_ones_are_left_out() -> None:
    big = np.arange(0, 200_000, 3, dtype=np.int64)
    vectors = {"a.parquet": new_vector([0]), "empty.parquet": new_vector(), "b.parquet": new_vector(big)}
    data, ranges = encode_index_file(vectors)
    assert [r.data_file for r in ranges] == ["a.parquet", "b.parquet"]
    assert list(read_vector(data, ranges[0], "f")) == [0]
    assert np.array_equal(np.asarray(read_vector(data, ranges[1], "f").to_array()), big)
    assert ranges[1].cardinality == big.size


def test_damaged_files_are_corrupt_metadata() -> None:
    flipped = bytearray(JAVA_FILE)
    flipped[12] ^= 1
    with pytest.raises(CorruptMetadataError, match="checksum"):
        read_vector(bytes(flipped), JAVA_RANGE, "index-x")
    with pytest.raises(CorruptMetadataError, match="size"):
        read_vector(JAVA_FILE, JAVA_RANGE._replace(length=24), "index-x")
    with pytest.raises(CorruptMetadataError, match="outside"):
        read_vector(JAVA_FILE, JAVA_RANGE._replace(offset=30), "index-x")
    with pytest.raises(CorruptMetadataError, match="version"):
        read_vector(b"\x02" + JAVA_FILE[1:], JAVA_RANGE, "index-x")


def test_mask_and_limits() -> None:
    assert deleted_mask(new_vector(), 3) is None
    assert deleted_mask(new_vector([0, 2]), 3).tolist() == [False, True, False]
    with pytest.raises(CorruptMetadataError, match="has 2 rows"):
        deleted_mask(new_vector([2]), 2, "data-1.parquet")
    with pytest.raises(UnsupportedFeatureError):
        new_vector([2**31])
    assert serialize_vector(new_vector([1]))[:4] == (1581511376).to_bytes(4, "big")


def test_negative_positions_are_refused_before_the_uint32_cast() -> None:
    # -1 cast to uint32 is 4294967295 and -2**32 + 5 is 5: both used to slip through silently
    for positions in (np.array([3, -1], dtype=np.int64), np.array([-(2**32) + 5], dtype=np.int64), [0, -1]):
        with pytest.raises(InvalidDataError, match=r"Row position -\d+ of data-7\.parquet is negative"):
            new_vector(positions, "data-7.parquet")
    with pytest.raises(UnsupportedFeatureError, match=r"2147483648 of data-7\.parquet"):
        new_vector(np.array([0, 2**31], dtype=np.int64), "data-7.parquet")
    assert list(new_vector(np.array([5, 0, 2**31 - 1], dtype=np.int64))) == [0, 5, 2**31 - 1]
    assert list(new_vector(iter([4, 2]))) == [2, 4]

"""Bucket assignment (§6): murmur hashBytesByWords, Java remainder, and buckets of real pypaimon tables."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm.bucket import assign_buckets, bucket_of_hashes, hash_scalar, murmur_hash_words
from lake_assets.spec.binary_row import encode_row
from lake_assets.spec.types import (
    BigIntType,
    DataType,
    DateType,
    DecimalType,
    TimestampType,
    parse_type,
    to_arrow,
)
from tests.vectors import VECTORS_DIR, load_json

VECTORS = load_json("bucket_vectors.json")
BUCKET_VECTORS: list[dict[str, Any]] = VECTORS["vectors"]
NUM_BUCKETS: list[int] = VECTORS["num_buckets"]


def vector_value(value: Any, t: DataType) -> Any:
    """bucket_vectors.json spells DATE, DECIMAL and TIMESTAMP values as ISO / decimal strings."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return dt.date.fromisoformat(value)
    if isinstance(t, DecimalType):
        return Decimal(value)
    if isinstance(t, TimestampType):
        return dt.datetime.fromisoformat(value)
    return value


def concat_rows(rows: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    return np.frombuffer(b"".join(rows), dtype=np.uint8), offsets


@pytest.mark.parametrize("vector", BUCKET_VECTORS, ids=lambda v: f"{v['group']}-{v['values']}")
def test_bucket_vector_scalar(vector: dict[str, Any]) -> None:
    row = bytes.fromhex(vector["binary_row_hex"])
    h = hash_scalar(row)
    assert h == vector["hash_int32"]
    assert h & 0xFFFFFFFF == vector["hash_uint32"]
    for n in NUM_BUCKETS:
        assert bucket_of_hashes(np.array([h], dtype=np.int32), n)[0] == vector["buckets"][str(n)]


def test_bucket_vectors_vectorized_all_at_once() -> None:
    # Rows of 16..48 bytes mixed together exercise the unequal-length path.
    data, offsets = concat_rows([bytes.fromhex(v["binary_row_hex"]) for v in BUCKET_VECTORS])
    hashes = murmur_hash_words(data, offsets)
    assert hashes.dtype == np.int32
    assert hashes.tolist() == [v["hash_int32"] for v in BUCKET_VECTORS]
    for n in NUM_BUCKETS:
        assert bucket_of_hashes(hashes, n).tolist() == [v["buckets"][str(n)] for v in BUCKET_VECTORS]


def test_bucket_vectors_assign_buckets_per_signature() -> None:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for vector in BUCKET_VECTORS:
        groups[tuple(vector["types"])].append(vector)
    checked = 0
    for signature, vectors in groups.items():
        types = [parse_type(t) for t in signature]
        columns = [
            pa.array([vector_value(v["values"][i], t) for v in vectors], type=to_arrow(t))
            for i, t in enumerate(types)
        ]
        for n in NUM_BUCKETS:
            buckets = assign_buckets(columns, types, n)
            assert buckets.dtype == np.int32
            assert buckets.tolist() == [v["buckets"][str(n)] for v in vectors]
        checked += len(vectors)
    assert checked == 59


def _pk_data_files() -> list[tuple[str, list[DataType], int, int, pa.Table]]:
    """(file, trimmed-PK types, num buckets, bucket from the path, table) for the PK vector tables."""
    out = []
    for vector_dir in ("02_pk_partitioned", "03_pk_composite", "04_partial_update", "05_aggregation"):
        schema = load_json(f"{vector_dir}/metadata_dump.json")["schema/schema-0"]
        by_name = {f["name"]: parse_type(f["type"]) for f in schema["fields"]}
        key_names = [k for k in schema["primaryKeys"] if k not in schema["partitionKeys"]]
        num_buckets = int(schema["options"]["bucket"])
        for path in sorted((VECTORS_DIR / vector_dir / "warehouse").rglob("data-*.parquet")):
            bucket = int(path.parent.name.removeprefix("bucket-"))
            table = pq.read_table(path).select([f"_KEY_{k}" for k in key_names])
            out.append((str(path), [by_name[k] for k in key_names], num_buckets, bucket, table))
    return out


def test_pk_rows_land_in_their_bucket() -> None:
    files = _pk_data_files()
    assert len(files) >= 20
    rows = 0
    for path, types, num_buckets, bucket, table in files:
        buckets = assign_buckets(table.columns, types, num_buckets)
        assert (buckets == bucket).all(), path
        for r in range(table.num_rows):
            key = [table.column(i)[r].as_py() for i in range(len(types))]
            h = hash_scalar(encode_row(key, types))
            assert bucket_of_hashes(np.array([h]), num_buckets)[0] == bucket
        rows += table.num_rows
    assert rows >= 25


def test_java_remainder() -> None:
    hashes = np.array([-7, 7, -8, 0, -(2**31), 2**31 - 1, -1], dtype=np.int32)
    assert bucket_of_hashes(hashes, 4).tolist() == [3, 3, 0, 0, 0, 3, 1]
    assert bucket_of_hashes(hashes, 7).tolist() == [0, 0, 1, 0, 2, 1, 1]
    assert bucket_of_hashes(hashes, 1).tolist() == [0] * 7
    with pytest.raises(ValueError):
        bucket_of_hashes(hashes, 0)


def test_murmur_input_checks_and_offsets() -> None:
    with pytest.raises(ValueError):
        hash_scalar(b"abc")
    with pytest.raises(ValueError):
        murmur_hash_words(np.zeros(6, dtype=np.uint8), np.array([0, 6]))
    assert murmur_hash_words(np.zeros(0, dtype=np.uint8), np.array([0])).tolist() == []
    rows = [bytes(range(8)), bytes(range(16)), bytes(8)]
    data, offsets = concat_rows(rows)
    # A window starting past row 0 hashes the remaining rows the same way.
    assert murmur_hash_words(data, offsets[1:]).tolist() == [hash_scalar(r) for r in rows[1:]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12).flatmap(lambda k: st.binary(min_size=4 * k, max_size=4 * k)), max_size=30))
def test_vectorized_hash_matches_scalar(rows: list[bytes]) -> None:
    data, offsets = concat_rows(rows)
    assert murmur_hash_words(data, offsets).tolist() == [hash_scalar(r) for r in rows]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 6).flatmap(lambda k: st.lists(st.binary(min_size=8 * k, max_size=8 * k), max_size=30)))
def test_vectorized_hash_equal_lengths(rows: list[bytes]) -> None:
    data, offsets = concat_rows(rows)
    assert murmur_hash_words(data, offsets).tolist() == [hash_scalar(r) for r in rows]


@pytest.mark.slow
def test_million_bigint_keys_vectorized() -> None:
    # Speed is measured in bench/, never asserted here: this checks the vectorized path at scale.
    keys = pa.array(np.random.default_rng(1).integers(-(2**63), 2**63 - 1, 1_000_000, dtype=np.int64))
    t = BigIntType(nullable=False)
    buckets = assign_buckets([keys], [t], 16)
    assert len(buckets) == 1_000_000 and buckets.min() >= 0 and buckets.max() < 16
    for r in (0, 123_456, 999_999):
        h = hash_scalar(encode_row([keys[r].as_py()], [t]))
        assert buckets[r] == abs(h) % 16


def test_bigint_fast_path_equals_the_binary_row_hash() -> None:
    """One non-null BIGINT column is hashed without building BinaryRows: same hash as the rows'
    (extremes, negatives, several chunks); a column with nulls takes the row path."""
    from lake_assets.lsm.bucket import _bigint_row_hashes
    from lake_assets.spec.binary_row import encode_rows

    rng = np.random.default_rng(5)
    values = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 100_000, dtype=np.int64),
                             np.array([0, -1, 1, 2**63 - 1, -(2**63), 2**31, -(2**31)], dtype=np.int64)])
    col = pa.chunked_array([pa.array(values[:777]), pa.array(values[777:])])
    t = BigIntType(nullable=False)
    assert (_bigint_row_hashes(col) == murmur_hash_words(*encode_rows([col], [t]))).all()
    with_null = pa.array([5, None, -7], pa.int64())
    want = bucket_of_hashes(np.array([hash_scalar(encode_row([v], [t])) for v in (5, None, -7)]), 7)
    assert assign_buckets([with_null], [t], 7).tolist() == want.tolist()

"""Bitmap file index version 2 (``file-index.bitmap.<column>.version = 2``, Paimon 1.x's layout) that
we write, byte for byte against Java.

Java 0.9 writes version 1 only and no peer writes Java's version-2 bytes (pypaimon-rust 0.4 writes
its bitmaps in value order, not Java's HashMap order; pypaimon 2.1 writes no bitmap index), so the
oracle is ``tests/java/src/lakeoracle/BitmapV2Ops.java``: HEAD's ``BitmapFileIndex.Writer`` and
``BitmapFileIndexMetaV2.serialize`` followed step by step with Java's own HashMap, RoaringBitmap32
and comparators. Every type our bitmaps key, nulls (none, one, many), values in one row and in
many, and index blocks from one to many (``index-block-size``), in one JVM call per case.
"""

from __future__ import annotations

import math
import random
import struct

import pyarrow as pa
import pytest

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.formats.bitmap_index import BitmapIndex, BitmapIndexBuilder
from lake_assets.spec.types import from_arrow
from tests.java.oracle import JavaError, PaimonJava
from tests.java.oracle_values import encode_values

from .test_bitmap_index_java import CASES


def _java_key(x: object) -> object:
    """Java's key identity: floats by their canonical bits (-0.0 is not 0.0; every NaN is one)."""
    if isinstance(x, float):
        return "nan" if math.isnan(x) else struct.pack(">d", x)
    return x


@pytest.mark.parametrize(("name", "typ", "pool"), CASES, ids=[c[0] for c in CASES])
def test_version_2_bytes_are_javas(java: PaimonJava, name: str, typ: pa.DataType, pool: list) -> None:
    rng = random.Random(name)
    paimon_type = from_arrow(typ)
    columns = [
        [rng.choice(pool) for _ in range(40)],  # no null, every value many times
        [None] + [rng.choice(pool) for _ in range(30)] + pool,  # one null row, some values in one row
        [None if rng.random() < 0.3 else rng.choice(pool) for _ in range(300)],  # many null rows
        [None, None],  # nulls only: no blocks
    ]
    failures: list[str] = []
    for values in columns:
        arr = pa.array(values, typ)
        for block_size in (16 * 1024, 64, 40):
            builder = BitmapIndexBuilder(paimon_type, version=2, block_size=block_size)
            builder.add(arr.slice(0, len(arr) // 2))
            builder.add(arr.slice(len(arr) // 2))
            try:
                ours, _ = builder.payload()
            except UnsupportedFeatureError:
                # an entry larger than a block (a long string): Java's writer fails too
                with pytest.raises(JavaError, match="index fail"):
                    java.bitmap_v2_serialize(paimon_type.to_json(), encode_values(arr), block_size)
                failures.append(name)
                continue
            theirs = java.bitmap_v2_serialize(paimon_type.to_json(), encode_values(arr), block_size)
            assert ours == theirs, (values, block_size)
            # our version-2 reader reads what we write: each value's rows, and the null rows
            index = BitmapIndex.parse(ours, paimon_type)
            for v in {x for x in values if x is not None} | {None}:
                lit = pa.array([v], typ)
                want = [i for i, x in enumerate(values) if _java_key(x) == _java_key(v)]
                assert sorted(index.rows_in(lit)) == want, (v, block_size)
    assert failures == (["string"] * 3 if name == "string" else [])

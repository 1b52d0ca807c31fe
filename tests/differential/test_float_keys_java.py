"""Float primary keys against Paimon Java 0.9.

Ordinary values (infinities included) agree both ways, whichever engine writes or compacts. NaN
and signed zero do not, on purpose: Java 0.9's generated comparator compared FLOAT/DOUBLE with
the integer ternary, so NaN compared equal to every key and -0.0 equal to 0.0; apache/paimon#8295
switched it to ``Float.compare``/``Double.compare`` (NaN one key above +inf, -0.0 < 0.0), which
lake_assets follows (docs/format.md §7.2). The last test records 0.9's behaviour so that an oracle
upgrade shows up here.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

ORDINARY = [1.5, -2.5, math.inf, -math.inf, 1e300, 1.5]


def _batches(keys: list[float], typ: pa.DataType) -> list[pa.Table]:
    one_per_key = [pa.table({"k": pa.array([k], typ), "v": pa.array([i], pa.int64())}) for i, k in enumerate(keys)]
    return [*one_per_key, pa.table({"k": pa.array(keys, typ), "v": pa.array(range(10, 10 + len(keys)), pa.int64())})]


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
def test_java_written_float_keys_read_alike(java: PaimonJava, wh: str, lake: Catalog, typ: pa.DataType) -> None:
    keys = [k for k in ORDINARY if pa.types.is_float64(typ) or abs(k) < 1e38 or math.isinf(k)]
    java.create_table(wh, "db.jf", pa.schema([pa.field("k", typ, nullable=False), ("v", pa.int64())]),
                      primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    for batch in _batches(keys, typ):
        java.write(wh, "db.jf", batch)
    expected = java.read(wh, "db.jf")
    assert expected.num_rows == len(set(keys))
    ours = lake.get_table("db.jf")
    assert_same_rows(ours.to_arrow(), expected)
    ours.compact(full=True)  # our compaction of Java's files
    assert_same_rows(ours.to_arrow(), expected)
    assert_same_rows(java.read(wh, "db.jf"), expected)


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
def test_our_float_keys_read_alike_in_java(java: PaimonJava, wh: str, lake: Catalog, typ: pa.DataType) -> None:
    keys = [k for k in ORDINARY if pa.types.is_float64(typ) or abs(k) < 1e38 or math.isinf(k)]
    t = lake.create_table("db.lf", pa.schema([("k", typ), ("v", pa.int64())]), primary_keys=["k"],
                          options={"bucket": "1", "write-only": "true"})
    for batch in _batches(keys, typ):
        t.write_arrow(batch)
    ours = t.to_arrow()
    assert ours.num_rows == len(set(keys))
    assert_same_rows(java.read(wh, "db.lf"), ours)
    java.compact(wh, "db.lf", full=True, options={"write-only": "false"})  # Java compacts our files
    assert_same_rows(t.to_arrow(), ours)
    assert_same_rows(java.read(wh, "db.lf"), ours)


def test_java_09_nan_and_signed_zero_predate_double_compare(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.jn", pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.int64())]),
                      primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    for i, k in enumerate([math.nan, math.nan, 0.0, -0.0]):  # one file per key: nothing merged on write
        java.write(wh, "db.jn", pa.table({"k": pa.array([k]), "v": pa.array([i], pa.int64())}))
    # Java 0.9 merges NaN into 0.0 and 0.0 into -0.0: one row survives.
    assert java.read(wh, "db.jn").to_pylist() == [{"k": -0.0, "v": 3}]
    # Double.compare, as Paimon since #8295: NaN (once, the later write), 0.0 and -0.0.
    got = {(repr(r["k"]), r["v"]) for r in lake.get_table("db.jn").to_arrow().to_pylist()}
    assert got == {("nan", 1), ("0.0", 2), ("-0.0", 3)}

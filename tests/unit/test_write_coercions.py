"""Writes take only lossless casts; anything else is refused naming the column (table unchanged)."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidDataError, SchemaError

STRUCT = pa.struct([("a", pa.int32())])
SCHEMA = pa.schema([("k", pa.int32()), ("f", pa.float32()), ("i", pa.int32()), ("s", STRUCT),
                    ("ts", pa.timestamp("us")), ("d", pa.date32()), ("str", pa.string()),
                    ("l", pa.list_(pa.float32()))])


def _row(**over):
    base = {"k": pa.array([1], pa.int32()), "f": pa.array([1.0], pa.float32()), "i": pa.array([1], pa.int32()),
            "s": pa.array([{"a": 1}], STRUCT), "ts": pa.array([datetime.datetime(2020, 1, 1)], pa.timestamp("us")),
            "d": pa.array([datetime.date(2020, 1, 1)], pa.date32()), "str": pa.array(["x"]),
            "l": pa.array([[1.0]], pa.list_(pa.float32()))}
    base.update(over)
    return pa.table(base)


@pytest.fixture
def table(catalog: Catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_row())
    return t


def _bad_utf8() -> pa.Array:
    offsets = pa.py_buffer(np.array([0, 2], dtype=np.int32).tobytes())
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\xff\xfe")])


@pytest.mark.parametrize(
    ("over", "error", "match"),
    [
        ({"f": pa.array([1e300])}, InvalidDataError, r"'f'.*overflows FLOAT"),
        ({"l": pa.array([[1.0, -1e300]])}, InvalidDataError, r"'l'.*overflows FLOAT"),
        ({"i": pa.array(["5"]).dictionary_encode()}, SchemaError, r"'i' has type dictionary.*string is not int32"),
        ({"str": pa.array([5]).dictionary_encode()}, SchemaError, r"'str'.*int64 is not string"),
        ({"s": pa.array([{"b": 1}])}, SchemaError, r"'s'.*struct fields \['b'\]"),
        ({"s": pa.array([{"a": 1, "b": 2}])}, SchemaError, r"'s'.*struct fields"),
        ({"s": pa.array([{"a": 1.5}])}, SchemaError, r"'s'.*field 'a': double is not int32"),
        ({"i": pa.array([2.0])}, SchemaError, r"'i'.*double is not int32"),
        ({"i": pa.array([True])}, SchemaError, r"'i'.*bool"),
        ({"ts": pa.array(np.array(["10000-01-01T00:00:00"], dtype="datetime64[s]"))}, InvalidDataError,
         r"'ts'.*years 1 to 9999"),
        ({"ts": pa.array(np.array(["10000-01-01T00:00:00"], dtype="datetime64[us]"))}, InvalidDataError,
         r"'ts'.*years 1 to 9999"),
        ({"d": pa.array(np.array([3_000_000], dtype=np.int32)).cast(pa.date32())}, InvalidDataError,
         r"'d'.*years 1 to 9999"),
        ({"str": _bad_utf8()}, InvalidDataError, r"'str'.*UTF8"),
    ],
)
def test_lossy_or_invalid_input_is_refused(table, over, error, match):
    with pytest.raises(error, match=match):
        table.write_arrow(_row(k=pa.array([2], pa.int32()), **over))
    assert len(table.snapshots()) == 1 and table.to_arrow().num_rows == 1


@pytest.mark.parametrize("data", [{"k": [1]}, [1, 2], None, "k,v"])
def test_data_that_is_not_arrow_is_refused(table, data):
    with pytest.raises(InvalidDataError, match="expected a pyarrow Table"):
        table.write_arrow(data)
    with pytest.raises(InvalidDataError, match="expected a pyarrow Table"):
        table.new_writer("u").write_arrow(data)


def test_lossless_casts_are_taken(table):
    table.write_arrow(_row(
        k=pa.array([3], pa.int8()), f=pa.array([0.5], pa.float64()), i=pa.array([7], pa.int16()),
        s=pa.array([{"a": 4}], pa.struct([("a", pa.int8())])), ts=pa.array([1], pa.timestamp("s")),
        str=pa.array(["y"]).dictionary_encode(), l=pa.array([[2.0]], pa.list_(pa.float64())),
    ))
    row = next(r for r in table.to_arrow().to_pylist() if r["k"] == 3)
    assert (row["f"], row["i"], row["s"], row["str"], row["l"]) == (0.5, 7, {"a": 4}, "y", [2.0])
    assert row["ts"] == datetime.datetime(1970, 1, 1, 0, 0, 1)

"""A big batch is checked column by column on a thread pool (`conform` with a pool): the error
is still the one of the first bad column in the table's order, whatever column finishes first,
and nothing is written."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, SchemaError
from lake_assets.ops.conform import conform
from lake_assets.ops.route import PARALLEL_GATHER_ROWS

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("s", pa.string()), ("t", pa.string())])


def _rows(n: int) -> dict[str, pa.Array]:
    return {"id": pa.array(np.arange(n), pa.int64()), "a": pa.array(np.arange(n) % 100, pa.int32()),
            "s": pa.array([f"s{i}" for i in range(n)]), "t": pa.array([f"t{i}" for i in range(n)])}


def _bad_utf8(n: int) -> pa.Array:
    """``n`` one-byte strings, the last of them not UTF-8 (0xff)."""
    chars = np.full(n, ord("x"), dtype=np.uint8)
    chars[-1] = 0xFF
    offsets = np.arange(n + 1, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars.tobytes()))


@pytest.mark.parametrize("rows", [100, PARALLEL_GATHER_ROWS + 5])
def test_the_first_bad_column_in_table_order_is_named(tmp_path, rows: int) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    cols = _rows(rows)
    # a: a value a BIGINT-to-INT write cannot hold; t (later, and cheaper to check than s): bad UTF-8
    cols["a"] = pa.array(np.arange(rows) + (1 << 40), pa.int64())
    cols["t"] = _bad_utf8(rows)
    with pytest.raises(InvalidDataError, match="column 'a'"):
        t.write_arrow(pa.table(cols))
    cols["a"] = pa.array(np.arange(rows) % 100, pa.int32())
    with pytest.raises(InvalidDataError, match="column 't'"):
        t.write_arrow(pa.table(cols))
    # a type no cast can make, after a column with bad values: the bad values are named first
    cols["s"] = _bad_utf8(rows)
    cols["t"] = pa.array(np.arange(rows), pa.float64())
    with pytest.raises(InvalidDataError, match="column 's'"):
        t.write_arrow(pa.table(cols))
    assert t.store.snapshot_manager.latest() is None
    good = pa.table(_rows(rows))
    t.write_arrow(good)
    assert t.to_arrow().sort_by("id").to_pylist() == good.to_pylist()


def test_conform_on_a_pool_equals_conform_without(tmp_path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"}).store.schema
    n = PARALLEL_GATHER_ROWS + 5
    cols = _rows(n)
    cols["a"] = pa.array(np.arange(n) % 100, pa.int8())  # widened to INT
    data = pa.table(cols).select(["t", "s", "a", "id"])  # and put in the table's order
    with ThreadPoolExecutor(2) as pool:
        assert conform(data, schema, "db.t", pool).equals(conform(data, schema, "db.t"))
        with pytest.raises(SchemaError, match="missing columns"):
            conform(data.drop_columns(["t"]), schema, "db.t", pool)

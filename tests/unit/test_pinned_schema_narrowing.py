"""A handle pinned to an older schema reads files written after a type widening.

Spark pins the schema it declared to a query (`FileStore.pin_schema`); when another handle widens
a column (INT to BIGINT) and writes a value only the wider type holds, the pinned read cannot cast
that file's column to the narrower type: it must say so with a `SchemaError` naming the table,
the column and both types, not leak pyarrow's ``ArrowInvalid``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, SchemaError
from lake_assets.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("qty", pa.int32())])
WIDE = pa.schema([("id", pa.int64()), ("qty", pa.int64())])


@pytest.fixture
def pinned(catalog: Catalog, warehouse: str) -> Table:
    """A handle pinned to schema-0 (qty INT) after another handle widened qty and wrote 2**40."""
    old = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    old.write_arrow(pa.table({"id": [1], "qty": [1]}, schema=SCHEMA))
    old.schema = old.store.schema_by_id(0)
    new = Catalog(warehouse).get_table("db.t")
    new.update_schema().update_column_type("qty", pa.int64()).commit()
    new.write_arrow(pa.table({"id": [2], "qty": [2**40]}, schema=WIDE))
    return old


MESSAGE = r"Cannot read db\.t with its schema-0: column qty holds a value outside INT \(schema-1.*BIGINT"


def test_a_pinned_read_of_a_value_outside_the_narrower_type_raises_a_schema_error(pinned: Table) -> None:
    with pytest.raises(SchemaError, match=MESSAGE):
        pinned.to_arrow()
    with pytest.raises(SchemaError, match=MESSAGE):
        list(pinned.to_batches(batch_size=1))


def test_values_inside_the_narrower_type_still_read_and_a_refresh_reads_the_wide_value(pinned: Table) -> None:
    assert pinned.to_arrow(filter=[("id", "=", 1)]).to_pylist() == [{"id": 1, "qty": 1}]
    assert pinned.refresh().to_arrow().sort_by("id").to_pylist() == [{"id": 1, "qty": 1}, {"id": 2, "qty": 2**40}]

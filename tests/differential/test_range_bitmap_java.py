"""What Java 0.9, which has no range-bitmap index (a Paimon 1.x kind), makes of a table we indexed with one.

Java 0.9 reads such a table in full, and with filters on other columns, but a filter on a
range-bitmap column makes its file-index reader look the type up and fail ("Can't find file index
for type: range-bitmap", ``FileIndexerFactoryUtils.load``): as on any table Paimon 1.x or
pypaimon-rust indexed with range-bitmap, and as with bsi (tests/differential/test_bsi_java.py).
docs/format.md §7.6 says so; lake_assets' range-bitmap is for tables read by Paimon 1.x engines.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([("id", pa.int32()), ("r", pa.string()), ("s", pa.string())])


def test_java_09_reads_our_range_bitmap_table_and_fails_only_on_a_filter_of_its_column(
        java: PaimonJava, wh: str, lake: Catalog) -> None:
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, options={"bucket": "-1", "file-index.range-bitmap.columns": "r",
                                                  "file-index.bloom-filter.columns": "s"})
    rows = pa.table({"id": list(range(20)), "r": [f"r{i % 4}" for i in range(20)], "s": [f"s{i}" for i in range(20)]},
                    schema=SCHEMA)
    t.write_arrow(rows.slice(0, 10))
    t.write_arrow(rows.slice(10))
    assert_same_table(java.read(wh, "db.t"), rows)
    assert_same_table(java.read(wh, "db.t", filter=[("s", "=", "s12")]), rows.slice(12, 1))
    with pytest.raises(JavaError, match="Can't find file index for type: range-bitmap"):
        java.read(wh, "db.t", filter=[("r", "=", "r3")])
    # the same filter through our reader: the index is there and prunes nothing it should keep
    assert sorted(t.to_arrow(filter=[("r", "=", "r3")]).column("id").to_pylist()) == [3, 7, 11, 15, 19]

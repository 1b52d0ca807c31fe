"""What Java 0.9, which has no bsi index (a Paimon 1.x kind), makes of a table we indexed with one.

Java 0.9 reads such a table in full, and with filters on other columns, but a filter on a bsi
column makes its file-index reader look the type up and fail ("Can't find file index for type:
bsi", ``FileIndexerFactoryUtils.load``): as on any table Paimon 1.x or pypaimon-rust indexed with
bsi. docs/format.md §7.6 says so; lake_assets' bsi is for tables read by Paimon 1.x engines.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([("id", pa.int32()), ("b", pa.int64()), ("s", pa.string())])


def test_java_09_reads_our_bsi_table_and_fails_only_on_a_filter_of_its_column(java: PaimonJava, wh: str,
                                                                             lake: Catalog) -> None:
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, options={"bucket": "-1", "file-index.bsi.columns": "b",
                                                  "file-index.bloom-filter.columns": "s"})
    rows = pa.table({"id": list(range(20)), "b": [i - 10 for i in range(20)], "s": [f"s{i}" for i in range(20)]},
                    schema=SCHEMA)
    t.write_arrow(rows.slice(0, 10))
    t.write_arrow(rows.slice(10))
    assert_same_table(java.read(wh, "db.t"), rows)
    assert_same_table(java.read(wh, "db.t", filter=[("s", "=", "s12")]), rows.slice(12, 1))
    with pytest.raises(JavaError, match="Can't find file index for type: bsi"):
        java.read(wh, "db.t", filter=[("b", "=", 3)])

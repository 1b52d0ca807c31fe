"""Options only lake_assets knows (`LAKE_ASSETS_OPTIONS`) do not stop Paimon engines reading a table."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.options import LAKE_ASSETS_OPTIONS
from tests.interop.paimon import canonical

pytestmark = pytest.mark.interop


def test_pypaimon_reads_a_table_with_lake_assets_options(pypaimon, tmp_warehouse):
    assert {"compaction.parallelism", "compaction.merge-rows"} <= LAKE_ASSETS_OPTIONS
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "2", "compaction.parallelism": "2", "write-only": "true",
                                  # a few rows per merge step: the compaction streams, in several row groups
                                  "compaction.merge-rows": "4"})
    t.write_arrow(pa.table({"id": list(range(20)), "name": [f"a{i}" for i in range(20)]}, schema=schema))
    t.write_arrow(pa.table({"id": [1, 5, 30], "name": ["B", "F", "x"]}, schema=schema))
    t.compact(full=True)
    theirs = pypaimon.read(tmp_warehouse, "db.t")
    assert canonical(t.to_arrow(), ["id"]) == canonical(theirs, ["id"])
    assert theirs.num_rows == 21

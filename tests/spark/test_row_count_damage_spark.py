"""The Spark source reading a data file whose manifest ``_ROW_COUNT`` is damaged.

Its Python workers read splits through the core's reader, so a count the file does not hold -
2**36 on a deletion-vector file, whose keep mask would otherwise be sized by it - fails the query
with the core's `CorruptMetadataError` naming the file and both counts
(`tests/reliability/test_trust_row_counts.py` covers the core's read paths).
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from lake_assets import Catalog
from tests.reliability.test_trust_row_counts import _fresh
from tests.reliability.test_trust_stored_numbers import _craft

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_spark_source_refuses_a_damaged_row_count(spark, catalog: Catalog, warehouse: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.t", schema, partition_keys=["dt"],
                             options={"bucket": "-1", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"k": list(range(20)), "dt": ["d"] * 20}, schema=schema))
    t.delete_where([("k", "<", 4)])
    assert spark.read.format("lake").option("warehouse", warehouse).load("db.t").count() == 16
    _craft(t, lambda f: dataclasses.replace(f, row_count=2**36))
    _fresh()
    df = spark.read.format("lake").option("warehouse", warehouse).load("db.t")
    for columns in (["k", "dt"], ["dt"]):  # the partition-only projection reads no file column
        with pytest.raises((Py4JJavaError, PySparkException),
                           match=r"holds 20 rows, but its manifest entry says 68719476736 \(_ROW_COUNT\)"):
            df.select(*columns).collect()

"""docs/spark.md's Python blocks run as written, on local tables in place of their example paths.

The S3 `delete_where` block of the core is run by tests/spark/test_jobs_compact.py; this runs the
others in order in one namespace that has the shared session as `spark` (as a user's has): Spark's
SQL `delete_where`, `write_table_native`, `read_table` and `build_session` (whose block lacked its
import: a NameError as written).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from lake_assets import Catalog

REPO = Path(__file__).resolve().parents[2]


def test_docs_spark_python_blocks_run_as_written(spark: SparkSession, tmp_path: Path) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", (REPO / "docs" / "spark.md").read_text(), flags=re.S | re.M)
    assert len(blocks) == 5 and '"s3://lake/wh"' in blocks[0]  # the first: test_jobs_compact.py
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    events = pa.schema([("id", pa.int64()), ("event_date", pa.date32()), ("region", pa.string())])
    cat.create_table("db.events", events, options={"bucket": "-1", "deletion-vectors.enabled": "true"}).write_arrow(
        pa.table({"id": [1, 2, 3], "event_date": pa.array([18000, 18000, 20000], pa.date32()),
                  "region": ["eu", None, "eu"]}, schema=events))
    orders = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64())])
    cat.create_table("db.orders", orders, primary_keys=["id"], options={"bucket": "2"})
    df = spark.createDataFrame([(1, 1.5), (2, 2.5)], "id long not null, amount double")
    namespace: dict[str, object] = {"spark": spark, "df": df}
    for i, block in enumerate(blocks[1:], start=2):
        code = block.replace('"s3://bucket/warehouse"', repr(wh)).replace('"/data/warehouse"', repr(wh))
        exec(compile(code, f"docs/spark.md python block {i}", "exec", dont_inherit=True), namespace)
        if i == 2:  # the rows before 2024 that are in eu or of no region
            assert (namespace["result"].rows_deleted, namespace["result"].files_marked) == (2, 1)
        if i == 3:
            assert namespace["result"].snapshot_ids
        if i == 4:
            assert sorted(tuple(r) for r in namespace["df"].collect()) == [(1, 1.5), (2, 2.5)]
    assert namespace["spark"] is spark  # build_session returns the running session (static conf kept)
    assert cat.get_table("db.events").to_arrow().column("id").to_pylist() == [3]

"""Sessions lake_assets builds hand Python workers Arrow batches of up to 100,000 rows."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from lake_assets.spark.session import session_conf

BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"


def test_sessions_default_to_100k_row_arrow_batches() -> None:
    assert session_conf()[BATCH_ROWS] == "100000"
    assert session_conf({BATCH_ROWS: "5000"})[BATCH_ROWS] == "5000"  # a caller's conf wins


def _batch_sizes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield pa.RecordBatch.from_pydict({"rows": [batch.num_rows]})


def test_a_python_worker_gets_the_sessions_batches(spark) -> None:
    pytest.importorskip("pyspark")
    assert spark.conf.get(BATCH_ROWS) == "100000"
    # one partition of 250,000 rows reaches its Python worker in 100K-row batches (Spark's own
    # default would send 25 batches of 10,000)
    frame = spark.range(250_000, numPartitions=1).mapInArrow(_batch_sizes, "rows long")
    assert sorted(r.rows for r in frame.collect()) == [50_000, 100_000, 100_000]

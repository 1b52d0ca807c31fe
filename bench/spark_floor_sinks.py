"""Two Python data sources that bound what any Python-side Spark write can cost
(`bench_spark_floor.py`). They live in their own module so Spark's Python workers import them by
name (the workers inherit ``PYTHONPATH``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage


class NullSink(DataSource):
    """Takes every Arrow batch Spark sends and writes nothing: the transport alone."""

    @classmethod
    def name(cls) -> str:
        return "floor_null"

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return _NullWriter()


class _NullWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class ParquetSink(DataSource):
    """Writes each task's batches as one zstd Parquet file with pyarrow, as they come (unsorted, no
    extra columns): the cheapest write a Python worker can do."""

    @classmethod
    def name(cls) -> str:
        return "floor_parquet"

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return _ParquetWriter(self.options["path"])


class _ParquetWriter(DataSourceArrowWriter):
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        batches = list(iterator)
        if batches:
            os.makedirs(self.path, exist_ok=True)
            pq.write_table(pa.Table.from_batches(batches), os.path.join(self.path, f"{uuid.uuid4()}.parquet"),
                           compression="zstd")
        return WriterCommitMessage()

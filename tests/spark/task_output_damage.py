"""A data source whose write tasks return damaged results, for
`tests/spark/test_task_output_trust_spark.py` (Spark's Python workers import it from this
checkout: ``PYTHONPATH`` names it)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.types import StructType

from lake_assets.spark.datasource import LakeDataSource
from lake_assets.spark.write_task import LakeCommitMessage
from lake_assets.spark.writer import LakeBatchWriter


class DamagingWriter(LakeBatchWriter):
    """`LakeBatchWriter` whose task of partition 1 reports a truncated message and records which
    ``lake_assets`` it ran (the worker's import path)."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LakeCommitMessage:
        from pyspark import TaskContext

        import lake_assets

        out = super().write(iterator)
        ctx = TaskContext.get()
        marker = self.options.raw.get("test.worker-marker")
        if marker:
            with open(marker, "a", encoding="utf-8") as fh:
                fh.write(os.path.dirname(os.path.dirname(lake_assets.__file__)) + "\n")
        if ctx is not None and ctx.partitionId() == 1 and out.messages:
            out = dataclasses.replace(out, messages=(out.messages[0][:60], *out.messages[1:]))
        return out


class DamagingSource(LakeDataSource):
    @classmethod
    def name(cls) -> str:
        return "lake-damaging"

    def writer(self, schema: StructType, overwrite: bool) -> LakeBatchWriter:
        return DamagingWriter(self.source, overwrite, schema.fieldNames())


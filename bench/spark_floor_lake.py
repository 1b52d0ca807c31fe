"""``format("floor_lake")``: the ``lake`` data source, unchanged, whose write tasks record the CPU
their Python worker spends (`bench_spark_floor.py --task-cpu`). Its own module, so that the floor
sinks' workers do not import lake_assets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from bench.spark_floor_sinks import TASK_CPU_DIR, recorded
from lake_assets.spark.datasource import LakeDataSource
from lake_assets.spark.source_options import SourceOptions
from lake_assets.spark.writer import LakeBatchWriter, LakeCommitMessage


class TimedLakeSource(LakeDataSource):
    """The lake source; batch write tasks record their worker's CPU when ``task-cpu-dir`` is set."""

    @classmethod
    def name(cls) -> str:
        return "floor_lake"

    def writer(self, schema: Any, overwrite: bool) -> LakeBatchWriter:
        return _TimedLakeWriter(self.source, overwrite, self.source.raw.get(TASK_CPU_DIR))


class _TimedLakeWriter(LakeBatchWriter):
    def __init__(self, options: SourceOptions, overwrite: bool, cpu_dir: str | None) -> None:
        super().__init__(options, overwrite)
        self.cpu_dir = cpu_dir

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LakeCommitMessage:
        message = recorded(self.cpu_dir, "lake_write", lambda: super(_TimedLakeWriter, self).write(iterator))
        assert isinstance(message, LakeCommitMessage)
        return message

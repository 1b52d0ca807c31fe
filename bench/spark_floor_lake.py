"""``format("floor_lake")``: the ``lake`` data source, unchanged, whose write tasks record the CPU
their Python worker spends (`bench_spark_floor.py --task-cpu`). Its own module, so that the floor
sinks' workers do not import lake_assets.

A worker unpickles a task's writer from this module, so the worker's import of
`lake_assets.spark.writer` (what a ``lake`` write's worker imports, after pyspark's own worker
modules) runs here first: its CPU is recorded as step ``lake_import``, and with the CPU of the
worker's first task as ``lake_first_task``.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from bench.spark_floor_sinks import TASK_CPU_DIR, recorded

_IMPORT_START = time.process_time()
from lake_assets.spark.writer import LakeBatchWriter, LakeCommitMessage  # noqa: E402 (timed)

# this process's import of the lake writer; recorded once, by the first task that runs here
_IMPORT_CPU: list[float] = [time.process_time() - _IMPORT_START]

from lake_assets.spark.datasource import LakeDataSource  # noqa: E402 (the source class: not timed)
from lake_assets.spark.source_options import SourceOptions  # noqa: E402


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
        imported = _IMPORT_CPU.pop() if self.cpu_dir and _IMPORT_CPU else None
        start = time.process_time()
        message = recorded(self.cpu_dir, "lake_write", lambda: super(_TimedLakeWriter, self).write(iterator))
        assert isinstance(message, LakeCommitMessage)
        if self.cpu_dir and imported is not None:  # this worker's first task: its import, and both together
            first = imported + time.process_time() - start
            for step, cpu in (("lake_import", imported), ("lake_first_task", first)):
                with open(os.path.join(self.cpu_dir, f"{step}-{uuid.uuid4().hex}.cpu"), "w") as fh:
                    fh.write(f"{cpu}\n")
        return message

"""Two Python data sources that bound what any Python-side Spark write can cost
(`bench_spark_floor.py`). They live in their own module so Spark's Python workers import them by
name (the workers inherit ``PYTHONPATH``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

# Option of the Parquet sink here (and of `spark_floor_lake.TimedLakeSource`): a directory where each
# write task leaves the CPU seconds its Python worker spent in it (all threads), one file a task.
TASK_CPU_DIR = "task-cpu-dir"


def recorded(directory: str | None, step: str, write: Callable[[], WriterCommitMessage]) -> WriterCommitMessage:
    """Run one task's ``write``; with a directory, record the worker's CPU seconds for it there.

    A Python worker runs one task at a time, so the process's CPU over the call is the task's,
    including threads the write starts (the lake writer's encode threads)."""
    if not directory:
        return write()
    start = time.process_time()
    out = write()
    with open(os.path.join(directory, f"{step}-{uuid.uuid4().hex}.cpu"), "w") as fh:
        fh.write(f"{time.process_time() - start}\n")
    return out


def task_cpu(directory: str, step: str) -> list[float]:
    """The CPU seconds of every task of ``step`` recorded in ``directory``."""
    out = []
    for name in os.listdir(directory):
        if name.startswith(step + "-") and name.endswith(".cpu"):
            with open(os.path.join(directory, name)) as fh:
                out.append(float(fh.read()))
    return out


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
    """Writes each task's batches as zstd Parquet with pyarrow, as they come (unsorted, no extra
    columns; one file, or ``files-per-task`` slices): the cheapest write a Python worker can do."""

    @classmethod
    def name(cls) -> str:
        return "floor_parquet"

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return _ParquetWriter(self.options["path"], self.options.get(TASK_CPU_DIR),
                              int(self.options.get(FILES_PER_TASK, "1")), int(self.options.get(ZSTD_LEVEL, "1")))


# Options of the Parquet sink: how many files each task writes (its rows in that many equal
# slices, as many files as the lake write makes), and the zstd level (pyarrow's default is 1).
FILES_PER_TASK = "files-per-task"
ZSTD_LEVEL = "zstd-level"


class _ParquetWriter(DataSourceArrowWriter):
    def __init__(self, path: str, cpu_dir: str | None = None, files: int = 1, zstd_level: int = 1) -> None:
        self.path = path
        self.cpu_dir = cpu_dir
        self.files = max(1, files)
        self.zstd_level = zstd_level

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return recorded(self.cpu_dir, "py_parquet", lambda: self._write(iterator))

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        batches = list(iterator)
        if batches:
            os.makedirs(self.path, exist_ok=True)
            data = pa.Table.from_batches(batches)
            step = -(-data.num_rows // self.files)
            for start in range(0, data.num_rows, step):
                pq.write_table(data.slice(start, step), os.path.join(self.path, f"{uuid.uuid4()}.parquet"),
                               compression="zstd", compression_level=self.zstd_level)
        return WriterCommitMessage()

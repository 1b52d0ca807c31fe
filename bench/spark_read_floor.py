"""``format("floor_read")``: the floor of a Python data source read (`bench_spark_read.py`).

Each partition is an Arrow IPC file written before the run with exactly the Arrow schema Spark
expects (`lake_assets.spark.schema.spark_arrow_schema`) in batches of the lake source's size; a
task memory-maps its file and yields the batches as they are. What remains is what every Python
source read pays: the task, the worker round trip and the Arrow transport into the JVM. Its own
module, so that its workers do not import lake_assets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

FILES = "files"  # option: JSON list of the IPC files, one per partition


@dataclass
class FloorPartition(InputPartition):
    path: str


class FloorReadSource(DataSource):
    """Yields pre-built Arrow batches; the schema is given with ``.schema(...)``."""

    @classmethod
    def name(cls) -> str:
        return "floor_read"

    def reader(self, schema: StructType) -> DataSourceReader:
        return _FloorReader(json.loads(self.options[FILES]))


class _FloorReader(DataSourceReader):
    def __init__(self, files: list[str]) -> None:
        self.files = files

    def partitions(self) -> list[InputPartition]:
        return [FloorPartition(f) for f in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FloorPartition)
        with pa.memory_map(partition.path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

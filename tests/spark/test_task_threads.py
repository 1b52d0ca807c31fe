"""A Spark task's writer uses ``spark.task.cpus`` threads, not the executor node's cores.

Spark sets ``OMP_NUM_THREADS`` to the task's CPUs for its Python workers (unless
``spark.executorEnv.OMP_NUM_THREADS`` is set); `lake_assets.parallelism.usable_cpus` follows it
through pyarrow's CPU count, and every pool of the core is sized by it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest

from lake_assets import Catalog

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_task_writer_pool_has_the_tasks_cpus(spark, catalog: Catalog, warehouse: str) -> None:
    catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "8"})
    task_cpus = int(spark.conf.get("spark.task.cpus", "1"))

    def write_in_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import os

        from lake_assets import Catalog
        from lake_assets.ops.write_spill import bucket_flush_threads
        from lake_assets.parallelism import usable_cpus

        writer = Catalog(warehouse).get_table("db.t").new_writer("threads-probe", write_only=True)
        try:
            for batch in batches:
                writer.write_arrow(pa.Table.from_batches([batch]).select(["k", "v"]))
            writer.prepare_commit()  # 8 buckets flushed on the writer's pool
            live = sum(1 for t in threading.enumerate() if t.name.startswith("lake-writer"))
            seen = {"omp": os.environ.get("OMP_NUM_THREADS"), "usable": usable_cpus(),
                    "flush": bucket_flush_threads(), "live": live, "node": os.cpu_count()}
        finally:
            writer.abort()
            writer.close()
        yield pa.RecordBatch.from_pydict({"seen": [json.dumps(seen)]})

    df = spark.range(0, 4000, numPartitions=2).selectExpr("id as k", "id * 2 as v")
    seen = [json.loads(r.seen) for r in df.mapInArrow(write_in_task, "seen string").collect()]
    assert len(seen) == 2
    for s in seen:
        assert s["node"] > task_cpus  # local[2]: the node has more cores than a task
        assert s["omp"] == str(task_cpus)
        assert (s["usable"], s["flush"]) == (task_cpus, task_cpus)
        assert 1 <= s["live"] <= task_cpus

"""What a fresh Spark Python worker imports when it unpickles a task's reader or writer.

Every Python worker Spark starts imports the module of the object it runs (`lake_assets.spark.writer`
for a write task, `lake_assets.spark.reader` / `.streaming` for reads) before the task's first row:
that import is paid once per worker process. Driver-side modules (the shuffle, the native write),
the Dagster layer and ``pyarrow.dataset`` are not needed there, nor the core's maintenance and
change-read verbs (`tests.unit.test_import_cost.VERB_MODULES`) for a write or a batch read.

pandas is not in the list: pyarrow imports it on its first ``pa.array`` call (its pandas shim asks
whether the input is a pandas object), which every write and read makes, and pyspark's own
data-source write imports it when it returns a task's commit message. A worker pays for pandas
whatever lake_assets does (bench/RESULTS.md, "The Spark path, round 7").
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.unit.test_import_cost import VERB_MODULES, modules_after

REPO = Path(__file__).resolve().parents[2]
WORKER_MODULES = ("lake_assets.spark.writer", "lake_assets.spark.reader", "lake_assets.spark.streaming")
NOT_ON_A_WORKER = (
    "pyarrow.dataset",
    "dagster",
    "lake_assets.defs",
    "lake_assets.spark.shuffle",
    "lake_assets.spark.native_write",
    "lake_assets.spark.native_files",
    "lake_assets.spark.jobs",
    "polars",
    "s3fs",
    "yaml",
    "pydantic",
)

# What only the driver runs of a write: the commit (conflict checks, snapshot and manifest files,
# overwrite, the wait for visibility), the rescale of a postpone table's written partitions, marking
# partitions done and the check of the sink's distribution. A worker unpickles its writer from
# `lake_assets.spark.writer`, whose commit methods import these where they run.
DRIVER_COMMIT_MODULES = (
    "lake_assets.ops.commit",
    "lake_assets.ops.commit_ahead",
    "lake_assets.ops.commit_attempts",
    "lake_assets.ops.commit_conflicts",
    "lake_assets.ops.commit_lifecycle",
    "lake_assets.ops.commit_replay",
    "lake_assets.ops.commit_snapshot",
    "lake_assets.ops.visibility_wait",
    "lake_assets.ops.overwrite",
    "lake_assets.ops.mark_done",
    "lake_assets.ops.rescale",
    "lake_assets.spark.sink_distribution",
)


def _imported_by(modules: tuple[str, ...]) -> set[str]:
    code = ("import importlib, json, sys\n"
            f"for m in {list(modules)!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return set(json.loads(done.stdout))


@pytest.mark.parametrize("module", WORKER_MODULES)
def test_worker_side_modules_import_no_driver_or_dagster_modules(module: str) -> None:
    loaded = _imported_by((module,))
    assert module in loaded
    unwanted = sorted(m for m in loaded for bad in NOT_ON_A_WORKER if m == bad or m.startswith(bad + "."))
    assert unwanted == []
    verbs = set(VERB_MODULES)
    if module == "lake_assets.spark.streaming":  # a stream's worker reads change splits
        verbs -= {"lake_assets.ops.stream", "lake_assets.ops.stream_postpone", "lake_assets.ops.full_phase_kinds"}
    assert sorted(loaded & verbs) == []


@pytest.mark.parametrize("bucket", ["2", "-2"])
def test_a_write_task_imports_no_verb_or_compaction_module(tmp_path: Path, bucket: str) -> None:
    """A worker's whole write task (what `LakeBatchWriter.write` runs: unrouted rows of a fixed-bucket
    table, and a postpone table's), after pyspark's own worker imports: the task writes write-only,
    so no compaction module is imported, nor any verb's; the driver's commit is not part of it."""
    schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.float64())])
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    catalog.create_table("db.t", schema, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": bucket})
    loaded = modules_after(f"""
        import pyspark.worker, pyspark.sql.datasource
        import pyarrow as pa
        from lake_assets.spark.source_options import SourceOptions
        from lake_assets.spark.writer import write_task
        rows = pa.record_batch({{"k": [1, 2, 3], "dt": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]}})
        options = SourceOptions.parse({{"path": "db.t", "warehouse": {str(tmp_path)!r}}})
        assert len(write_task(options, "user", iter([rows])).messages) == 2
    """)
    assert "lake_assets.spark.writer" in loaded and "lake_assets.ops.write" in loaded
    assert sorted(loaded & set(VERB_MODULES)) == []
    assert sorted(m for m in loaded if m.startswith("lake_assets.ops.compact")) == []
    assert "fsspec" not in loaded  # the warehouse is a local path


def test_the_driver_commit_modules_exist() -> None:
    """A renamed module would make the checks of `DRIVER_COMMIT_MODULES` pass vacuously."""
    for name in DRIVER_COMMIT_MODULES:
        assert (REPO / (name.replace(".", "/") + ".py")).is_file(), name


@pytest.mark.parametrize("bucket", ["2", "-2"])
def test_a_writer_worker_imports_no_commit_module(tmp_path: Path, bucket: str) -> None:
    """A worker as Spark runs one: it unpickles the writer the driver made (`LakeBatchWriter`; a
    postpone table's carries its bucket plan and writes into real buckets) after pyspark's own
    worker imports, and writes one task. None of the driver's commit modules is imported, and the
    task's messages commit in this process, as the driver's commit does."""
    from lake_assets.spark.source_options import SourceOptions
    from lake_assets.spark.writer import LakeBatchWriter

    schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.float64())])
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": bucket})
    writer = LakeBatchWriter(SourceOptions.parse({"path": "db.t", "warehouse": str(tmp_path)}), overwrite=False)
    assert (writer.plan is not None) == (bucket == "-2")
    task = tmp_path / "writer.pickle"
    task.write_bytes(pickle.dumps(writer))
    message = tmp_path / "message.pickle"
    loaded = modules_after(f"""
        import pickle
        import pyspark.worker, pyspark.sql.datasource
        import pyarrow as pa
        import lake_assets
        assert lake_assets.__file__.startswith({str(REPO)!r}), lake_assets.__file__  # this tree's code
        with open({str(task)!r}, "rb") as f:
            writer = pickle.load(f)
        rows = pa.record_batch({{"k": [1, 2, 3], "dt": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]}})
        with open({str(message)!r}, "wb") as f:
            pickle.dump(writer.write(iter([rows])), f)
    """)
    assert "lake_assets.spark.writer" in loaded
    assert ("lake_assets.ops.postpone_fixed_bucket" in loaded) == (bucket == "-2")
    assert sorted(loaded & set(DRIVER_COMMIT_MODULES)) == []
    assert sorted(loaded & set(VERB_MODULES)) == []
    writer.commit([pickle.loads(message.read_bytes())])
    assert sorted(table.to_arrow().column("k").to_pylist()) == [1, 2, 3]


def test_a_filtered_read_task_imports_no_dataset_module(tmp_path: Path) -> None:
    """A worker's read task with the ``filter`` option (`LakeReader.read` of each planned partition,
    unpickled as a worker receives them): the key, partition and float terms, OR of ANDs, are
    applied without Arrow's expression engine, so neither ``pyarrow.dataset`` nor any verb or
    driver module is imported."""
    from lake_assets.spark.reader import LakeReader
    from lake_assets.spark.schema import spark_schema
    from lake_assets.spark.source_options import SourceOptions

    schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.float64())])
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    table.write_arrow(pa.table({"k": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": [0.0, -0.0, 2.5, 9.0]},
                               schema=schema))
    where = [[["k", ">", 1], ["v", "<", 5.0]], [["dt", "=", "b"], ["v", "in", [9.0]]]]
    options = SourceOptions.parse({"path": "db.t", "warehouse": str(tmp_path), "filter": json.dumps(where)})
    reader = LakeReader(options, spark_schema(table.arrow_schema), None)
    task = tmp_path / "task.pickle"
    task.write_bytes(pickle.dumps((reader, reader.partitions())))
    loaded = modules_after(f"""
        import pickle
        import pyspark.worker, pyspark.sql.datasource
        with open({str(task)!r}, "rb") as f:
            reader, partitions = pickle.load(f)
        keys = sorted(k for p in partitions for batch in reader.read(p) for k in batch.column("k").to_pylist())
        assert keys == [2, 3, 4], keys  # -0.0 < 5.0; 9.0 only by the second clause
    """)
    assert "lake_assets.spark.reader" in loaded and "lake_assets.ops.read" in loaded
    unwanted = sorted(m for m in loaded for bad in NOT_ON_A_WORKER if m == bad or m.startswith(bad + "."))
    assert unwanted == [] and "pyarrow.acero" not in loaded
    assert sorted(loaded & set(VERB_MODULES)) == []


def test_package_names_still_resolve_on_first_use() -> None:
    """`lake_assets.spark`'s public names are imported when first asked for, submodules as before."""
    code = ("import sys\n"
            "from lake_assets.spark import register, write_table, read_table, source_options\n"
            "import lake_assets.spark as s\n"
            "assert s.repartition_by_bucket.__module__ == 'lake_assets.spark.shuffle'\n"
            "assert s.write_table_native.__module__ == 'lake_assets.spark.native_write'\n"
            "assert s.LakeDataSource.name() == 'lake'\n"
            "assert source_options.__name__ == 'lake_assets.spark.source_options'\n"
            "try:\n    s.no_such_name\nexcept AttributeError as e:\n    print(e)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    assert done.stdout.strip() == "module 'lake_assets.spark' has no attribute 'no_such_name'"

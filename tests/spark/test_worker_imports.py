"""What a fresh Spark Python worker imports when it unpickles a task's reader or writer.

Every Python worker Spark starts imports the module of the object it runs (`lake_assets.spark.writer`
for a write task, `lake_assets.spark.reader` / `.streaming` for reads) before the task's first row:
that import is paid once per worker process. Driver-side modules (the shuffle, the native write),
the Dagster layer and ``pyarrow.dataset`` are not needed there.

pandas is not in the list: pyarrow imports it on its first ``pa.array`` call (its pandas shim asks
whether the input is a pandas object), which every write and read makes, and pyspark's own
data-source write imports it when it returns a task's commit message. A worker pays for pandas
whatever lake_assets does (bench/RESULTS.md, "The Spark path, round 7").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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

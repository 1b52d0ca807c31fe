"""Spark tasks spill into Spark's local directories (``spark.local.dir``), as Paimon's Spark
writers do through their ``IOManager``, never into the system temp directory.

A session's ``spark.local.dir`` is fixed when its context starts, and the tests share one session:
this test starts its own ``local[2]`` session in a subprocess, with ``spark.local.dir`` and the
system temp directory (``TMPDIR``) both test directories. Its tasks write through the core's
writer with a tiny write buffer: while the writer holds its spilled runs, they are listed where
they are - under the executor's block-manager directory inside ``spark.local.dir``
(``SPARK_LOCAL_DIRS`` as the Python worker sees it). A ``df.write`` of spilling tasks then runs
as usual, and the driver's writers get ``spark.local.dir`` (`driver_spill_dir`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCRIPT = textwrap.dedent('''
    import json, os, sys
    from collections.abc import Iterator

    import pyarrow as pa

    from lake_assets import Catalog
    from lake_assets.spark.session import build_session
    from lake_assets.spark.spill_dirs import driver_spill_dir

    local_dir, warehouse = sys.argv[1], sys.argv[2]
    spark = build_session("spill-dirs", master="local[2]", log_level="ERROR",
                          conf={"spark.ui.enabled": "false", "spark.local.dir": local_dir,
                                "spark.sql.shuffle.partitions": "2"})
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", schema, primary_keys=["k"],
                         options={"bucket": "2", "write-buffer-size": "64 kb"})

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import os
        import tempfile

        from lake_assets import Catalog

        writer = Catalog(warehouse).get_table("db.t").new_writer("probe", write_only=True)
        try:
            for b in batches:
                t = pa.Table.from_batches([b])
                writer.write_arrow(pa.table({"k": t["id"], "v": pa.compute.cast(t["id"], pa.string())}))
            # the runs spilled so far are on disk until prepare_commit merges them
            spilled = sorted(os.path.join(d, f) for d, _, fs in os.walk(local_dir) for f in fs
                             if f.startswith("run-") and "lake-assets-spill-" in d)
            seen = {"spark_local_dirs": os.environ.get("SPARK_LOCAL_DIRS"), "runs": spilled,
                    "system_tmp": tempfile.gettempdir()}
        finally:
            writer.abort()
            writer.close()
        yield pa.RecordBatch.from_pydict({"seen": [json.dumps(seen)]})

    rows = spark.range(0, 60000, numPartitions=2)
    seen = [json.loads(r.seen) for r in rows.mapInArrow(probe, "seen string").collect()]
    rows.selectExpr("id as k", "cast(id as string) as v").write.format("lake") \\
        .option("warehouse", warehouse).option("table", "db.t").mode("append").save()
    count = Catalog(warehouse).get_table("db.t").to_arrow().num_rows
    print(json.dumps({"tasks": seen, "driver": driver_spill_dir(spark), "rows": count}))
    spark.stop()
''')


def test_spark_tasks_spill_under_spark_local_dir(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    local_dir, system_tmp, warehouse = tmp_path / "spark-local", tmp_path / "system-tmp", tmp_path / "wh"
    local_dir.mkdir()
    system_tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LAKE_ASSETS_SPILL_DIR", "SPARK_LOCAL_DIRS")}
    env.update(TMPDIR=str(system_tmp), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(local_dir), str(warehouse)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(out["tasks"]) == 2
    for task in out["tasks"]:
        # the worker sees the executor's block-manager dir under spark.local.dir ...
        assert task["spark_local_dirs"].startswith(str(local_dir / "blockmgr-"))
        assert task["system_tmp"] == str(system_tmp)
        # ... and the writer's runs were there while it held them
        assert task["runs"], task
        assert all(r.startswith(task["spark_local_dirs"] + os.sep) for r in task["runs"])
    assert out["rows"] == 60000
    assert out["driver"] == str(local_dir)
    # nothing was ever left in the system temp directory (the JVM's own files aside)
    assert not [p for p in system_tmp.rglob("*") if "lake-assets-spill-" in str(p)]

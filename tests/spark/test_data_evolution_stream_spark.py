"""The Spark streaming source on a data-evolution table, end to end: appends (whole rows and a
column subset), column updates and a compaction between micro-batches. Each micro-batch equals
the core's change stream of its snapshot (`Table.read_changes`), and the first one the core's
merged batch read (the full phase of ``latest-full``). Paimon Java 0.9 predates data evolution;
pypaimon 2.1 streams the same changes (tests/interop/test_row_tracking_interop.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.interop.test_row_tracking_interop import OPTIONS, SCHEMA

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

COLUMNS = ["id", "p", "v", "_ROW_ID"]


def _sorted(rows: Any) -> list[tuple]:
    """Rows in ``_ROW_ID`` order (then the rest; nulls first)."""
    return sorted((tuple(r) for r in rows), key=lambda r: (r[3], [(x is not None, x) for x in r]))


def _run(spark, warehouse: str, checkpoint: Path) -> list[list[tuple]]:
    """One availableNow run, a snapshot per micro-batch: each non-empty batch's rows, in order."""
    batches: list[list[tuple]] = []

    def collect(df: Any, _: int) -> None:  # foreachBatch runs in this (the driver's) process
        rows = _sorted(df.collect())
        if rows:
            batches.append(rows)

    stream = (spark.readStream.format("lake").option("warehouse", warehouse)
              .option("max-snapshots-per-trigger", "1").schema("id long, p string, v string, _ROW_ID long")
              .load("db.t"))
    query = (stream.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(180)
    finally:
        query.stop()
    return batches


def _core(t: Any, snapshots: list[int]) -> list[list[tuple]]:
    out = []
    for sid in snapshots:
        got = t.read_changes(sid - 1, sid, columns=COLUMNS).select(COLUMNS)
        if got.num_rows:
            out.append(_sorted(r.values() for r in got.to_pylist()))
    return out


def test_stream_of_a_data_evolution_table_equals_the_core_change_stream(
        spark, catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    import lake_assets

    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert worker == [lake_assets.__file__]  # the Python workers import this checkout
    t = catalog.create_table("db.t", SCHEMA, options={**OPTIONS, "compaction.min.file-num": "2"})
    t.write_arrow(pa.table({"id": [1, 2], "p": ["a", "b"], "v": ["x", "y"]}, schema=SCHEMA))  # 1
    t.write_arrow(pa.table({"id": [3], "p": ["c"]}), write_columns=["id", "p"])  # 2: v null
    checkpoint = tmp_path / "checkpoint"
    first = _run(spark, warehouse, checkpoint)
    merged = _sorted(r.values() for r in t.to_arrow(columns=COLUMNS).to_pylist())
    assert first == [merged] == [[(1, "a", "x", 0), (2, "b", "y", 1), (3, "c", None, 2)]]

    t.update_columns(pa.table({"_ROW_ID": pa.array([0, 2], pa.int64()), "v": ["X", "Z"]}))  # 3
    assert t.compact().files_out == 1  # 4: one file of rows 0-2 (a COMPACT: no changes)
    t.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "v": ["Y"]}))  # 5: over the output
    t.write_arrow(pa.table({"id": [4], "p": ["d"], "v": ["w"]}, schema=SCHEMA))  # 6
    t.write_arrow(pa.table({"id": [5], "p": ["e"]}), write_columns=["id", "p"])  # 7
    later = _run(spark, warehouse, checkpoint)
    core = _core(catalog.get_table("db.t"), [3, 4, 5, 6, 7])
    assert later == core
    # an update's changes are rows of its columns (the rows of its range), as HEAD and pypaimon read them
    # an update's changes are its file's rows: its columns over its whole range (the rows not updated
    # with their values then), the others null, as HEAD and pypaimon stream them; the COMPACT has none
    assert core == [[(None, None, "X", 0), (None, None, "y", 1), (None, None, "Z", 2)],
                    [(None, None, "X", 0), (None, None, "Y", 1), (None, None, "Z", 2)],
                    [(4, "d", "w", 3)], [(5, "e", None, 4)]]

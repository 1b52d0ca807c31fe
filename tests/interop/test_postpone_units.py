"""The seam of the postpone compaction that distributed jobs use (ops/postpone.py): one unit per
partition, planned from the manifests; a run that fails part-way deletes what the finished units
wrote. Tables written by pypaimon 2.1."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone import plan_postpone
from tests.interop.paimon import Pypaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])


def data(dt: str, ids: range) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [f"x{i}" for i in ids]}, schema=SCHEMA)


def test_units_per_partition_and_a_failed_run_leaves_no_files(tmp_path: Path, pypaimon: Pypaimon) -> None:
    wh = tmp_path / "warehouse"
    pypaimon.create_table(wh, "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet", "postpone.default-bucket-num": "3"})
    pypaimon.write(wh, "db.p", pa.concat_tables([data(dt, range(10)) for dt in ("a", "b", "c")]))
    table = Catalog(str(wh)).get_table("db.p")
    units = plan_postpone(table.store)
    assert sorted(table.store.partition_path_of(u.partition) for u in units) == ["dt=a", "dt=b", "dt=c"]
    assert {(u.buckets, len(u.files), u.input_rows) for u in units} == {(3, 1, 10)}
    assert [table.store.partition_path_of(u.partition) for u in plan_postpone(table.store, [{"dt": "b"}])] == ["dt=b"]
    # the last unit's file is gone: the run fails after the others wrote their buckets
    last = units[-1]
    os.remove(table.store.data_file_path(last.partition, -2, last.files[0].file))
    latest = table.latest_snapshot().id
    with pytest.raises(Exception):  # noqa: B017 - whatever the file system raises for a missing file
        table.compact()
    assert table.latest_snapshot().id == latest
    # nothing the failed run wrote is left behind (no orphan but none)
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []

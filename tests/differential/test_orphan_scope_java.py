"""What orphan removal deletes, next to Paimon Java 0.9's ``OrphanFilesClean`` on the same table.

Both list snapshot/changelog, manifest/index/statistics and the bucket directories below the
partition levels, and neither touches the table root or directories without ``=`` in their name.
The one difference is 0.9's: below a partition level it also deletes every old entry that is not a
bucket directory (``listAndCleanDataDirs``, release-0.9.0 lines 507-559) - Flink's own ``_SUCCESS``
mark-done files and other tools' directories. Paimon 1.0 stopped that ("ignore unknown dirs",
588d7f2c); lake_assets does what 1.0 to HEAD do (docs/format.md §9.4).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
OLD = time.time() - 10 * 86400


def plant(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"leftover")
    os.utime(path, (OLD, OLD))
    return path


def rows(ids: range, day: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [day] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_orphan_removal_deletes_what_java_deletes_but_other_tools_files(java: PaimonJava, wh: str, lake: Catalog,
                                                                        partitioned: bool) -> None:
    ident = "db.scope"
    java.create_table(wh, ident, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"] if partitioned else [],
                      options={"bucket": "2", "partition.idle-time-to-done": "1 h"})
    java.write(wh, ident, rows(range(10), "2024-01-01"))
    java.write(wh, ident, rows(range(5, 15), "2024-01-02"))
    root = Path(wh) / "db.db" / "scope"
    data_dirs = sorted(root.glob("dt=*")) if partitioned else [root]
    buckets = sorted(root.rglob("bucket-*"))
    # what both delete: unreferenced old files in Paimon's own directories
    both = [plant(buckets[0] / "data-stray-0.parquet"), plant(buckets[-1] / "changelog-stray-1.parquet"),
            plant(root / "manifest" / "manifest-stray-0"), plant(root / "manifest" / "manifest-list-stray-1"),
            plant(root / "snapshot" / ".snapshot-7.0f1e.tmp")]
    # what neither deletes: the root and directories that are not partitions
    neither = [plant(root / "README.md"), plant(root / "hive-staging" / "part-00000")]
    # what only 0.9 deletes: entries beside the bucket directories of a partition
    java_only: list[Path] = []
    for d in data_dirs[: 1 if partitioned else 0]:
        staging = plant(d / "_temporary" / "0" / "part-0").parent.parent  # a Hadoop job's staging directory
        os.utime(staging, (OLD, OLD))
        java_only += [plant(d / "_SUCCESS"), staging]
    if not partitioned:
        neither.append(plant(root / "_SUCCESS"))  # beside the buckets of an unpartitioned table: kept by 0.9 too
    bound = int((time.time() - 3600) * 1000)

    t = lake.get_table(ident)
    ours = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=True).paths
    theirs = java.remove_orphan_files(wh, ident, older_than_ms=bound, dry_run=True)
    assert sorted(ours) == sorted(map(str, both))
    assert sorted(theirs) == sorted(map(str, both + java_only))

    expected = java.read(wh, ident)
    done = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths
    assert sorted(done) == sorted(map(str, both))
    assert not any(p.exists() for p in both)
    assert all(p.exists() for p in neither + java_only)
    # what Java 0.9 still finds afterwards is exactly what 1.0+ stopped deleting
    assert sorted(java.remove_orphan_files(wh, ident, older_than_ms=bound, dry_run=True)) == sorted(
        map(str, java_only))
    assert_same_rows(java.read(wh, ident), expected)
    assert_same_rows(t.refresh().to_arrow(), expected)

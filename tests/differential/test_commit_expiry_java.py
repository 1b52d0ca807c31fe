"""Snapshot expiry at commit against Paimon Java 0.9: each engine's commits expire the same snapshots.

Java 0.9's ``TableCommitImpl`` runs the table's snapshot expiry after every commit of a committer
that is not ``write-only`` (``AbstractFileStoreTable.newCommit``; unchanged at HEAD), at most
``snapshot.expire.limit`` snapshots at a time; the dedicated compaction commits through a copy with
``write-only = false``. Here one engine writes six snapshots to a write-only table (all kept),
compacts (a limited expiry), the table turns non-write-only and its writers' commits expire down to
``snapshot.num-retained.min``. A 1 ms ``snapshot.time-retained`` keeps the time rule out of the way
(0.9 checks an expiring snapshot's own commit time, HEAD and lake_assets the next one's: with every
snapshot older than the cut-off both rules expire the same ids).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
OPTIONS = {"bucket": "1", "write-only": "true", "snapshot.num-retained.min": "3",
           "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "2"}


def _ids(java: PaimonJava, lake: Catalog, wh: str) -> list[int]:
    theirs = [s["id"] for s in java.snapshots(wh, "db.t")]
    assert theirs == [s.id for s in lake.get_table("db.t").snapshots()]
    return theirs


def _write(engine: str, java: PaimonJava, lake: Catalog, wh: str, i: int) -> None:
    data = pa.table({"id": [i % 4], "v": [f"v{i}"]}, schema=SCHEMA)
    if engine == "java":
        java.write(wh, "db.t", data)
    else:
        lake.get_table("db.t").write_arrow(data)


@pytest.mark.parametrize("engine", ["java", "lake"])
def test_commits_expire_snapshots_as_java_does(java: PaimonJava, lake: Catalog, wh: str, engine: str) -> None:
    if engine == "java":
        java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options=OPTIONS)
    else:
        lake.create_table("db.t", SCHEMA, primary_keys=["id"], options=OPTIONS)
    for i in range(1, 7):
        _write(engine, java, lake, wh, i)
    assert _ids(java, lake, wh) == [1, 2, 3, 4, 5, 6]  # write-only: its writers expire nothing
    if engine == "java":
        java.compact(wh, "db.t", full=True, options={"write-only": "false"})
    else:
        lake.get_table("db.t").compact(full=True)
    # the dedicated compaction's commit (7) expires, two at a time: min(7 - 3 + 1, 1 + 2) = 3
    assert _ids(java, lake, wh) == [3, 4, 5, 6, 7]
    if engine == "java":
        java.alter_table(wh, "db.t", {"change": "set_option", "key": "write-only", "value": "false"})
    else:
        lake.alter_table_options("db.t", set={"write-only": "false"})
    for i, kept in ((7, [5, 6, 7, 8]), (8, [7, 8, 9]), (9, [8, 9, 10])):
        _write(engine, java, lake, wh, i)
        assert _ids(java, lake, wh) == kept
    expected = pa.table({"id": [1, 2, 3, 0], "v": ["v9", "v6", "v7", "v8"]}, schema=SCHEMA)
    assert_same_rows(java.read(wh, "db.t"), expected, ["id"])
    assert_same_rows(lake.get_table("db.t").to_arrow(), expected, ["id"])

"""The commit-time lifecycle of a ``write-only`` table against Paimon Java 0.9: writers run none of
it, the dedicated compaction runs all of it.

Java 0.9's ``AbstractFileStoreTable.newCommit`` (unchanged at HEAD) gives the committer of a
write-only table no snapshot expiry, no partition expiry and no ``TagAutoManager`` (automatic tags
and tag expiry); its compact action and Spark's compact procedure copy the table with
``write-only = false`` first, so their commits run them. The oracle's ``compact`` with that option
is that compaction. Each engine writes, each compacts: the same tags (names and snapshots), the same
partitions expired, the same snapshots kept (the default retention keeps them all in both).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import partition_expire
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
ENGINES = ["java", "lake"]
OPTIONS = {"bucket": "1", "write-only": "true", "tag.automatic-creation": "process-time",
           "tag.creation-period": "daily", "partition.expiration-time": "7 d",
           "partition.expiration-check-interval": "0 s"}


@pytest.fixture(autouse=True)
def _fresh_commit_time_checks() -> None:
    partition_expire._last_check.clear()


def _days_ago(*days: int) -> list[str]:
    return [(dt.date.today() - dt.timedelta(days=d)).isoformat() for d in days]


def _tags(java: PaimonJava, lake: Catalog, wh: str) -> dict[str, int]:
    ours = {n: s.id for n, s in lake.get_table("db.t").tags().items()}
    assert java.tags(wh, "db.t") == ours
    return ours


def _snapshots(java: PaimonJava, lake: Catalog, wh: str) -> list[tuple[int, str]]:
    theirs = [(s["id"], s["commitKind"]) for s in java.snapshots(wh, "db.t")]
    t = lake.get_table("db.t")
    assert theirs == [(s.id, s.commit_kind.name) for s in t.snapshots()]
    return theirs


def _both_read(java: PaimonJava, lake: Catalog, wh: str, expected: pa.Table) -> None:
    assert_same_rows(java.read(wh, "db.t"), expected, ["id", "dt"])
    assert_same_rows(lake.get_table("db.t").to_arrow(), expected, ["id", "dt"])


@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("compactor", ENGINES)
def test_writers_run_no_lifecycle_and_the_dedicated_compaction_runs_it(java: PaimonJava, lake: Catalog, wh: str,
                                                                       writer: str, compactor: str) -> None:
    if writer == "java":
        java.create_table(wh, "db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    else:
        lake.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    days = _days_ago(0, 30)
    for rows in ({"id": [1, 2], "dt": days}, {"id": [3], "dt": days[:1]}):
        data = pa.table(rows, schema=SCHEMA)
        if writer == "java":
            java.write(wh, "db.t", data)
        else:
            lake.get_table("db.t").write_arrow(data)
    lake.get_table("db.t").create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    # two writers' commits, check interval 0: no automatic tag, "short" kept, nothing expired
    assert _tags(java, lake, wh) == {"short": 2}
    _both_read(java, lake, wh, pa.table({"id": [1, 2, 3], "dt": [days[0], days[1], days[0]]}, schema=SCHEMA))
    if compactor == "java":
        java.compact(wh, "db.t", full=True, options={"write-only": "false"})
    else:
        assert lake.get_table("db.t").compact(full=True).snapshot_id == 3
    # its commit: the old partition dropped (an OVERWRITE), yesterday's tag on the first snapshot
    # (Paimon's TagAutoCreation starts at the earliest snapshot), "short" expired; no snapshot expired
    assert _snapshots(java, lake, wh) == [(1, "APPEND"), (2, "APPEND"), (3, "COMPACT"), (4, "OVERWRITE")]
    assert _tags(java, lake, wh) == {_days_ago(1)[0]: 1}
    _both_read(java, lake, wh, pa.table({"id": [1, 3], "dt": days[:1] * 2}, schema=SCHEMA))

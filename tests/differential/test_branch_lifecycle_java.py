"""Commit-time partition expiry (``partition.expiration-time``) on a branch, against Paimon Java 0.9.

Java builds main (two partitions, one a month old), tags it and makes branch ``b1`` from the tag;
the branch alone is then altered to expire partitions older than 7 days at every commit (the
main branch keeps no such option). A commit to the branch - ours on one copy, Java's on another -
drops the old partition in the branch's next snapshot (an OVERWRITE, as Java's committer commits
it); both engines read the same branch, and the main branch keeps the old partition.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
IDENT = "db.t"
B1 = f"{IDENT}$branch_b1"


def _days_ago(*days: int) -> list[str]:
    today = dt.date.today()
    return [(today - dt.timedelta(days=d)).isoformat() for d in days]


def test_commit_time_partition_expiry_of_a_branch_agrees_with_java(java: PaimonJava, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    w = str(ours)
    java.create_table(w, IDENT, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    recent, old = _days_ago(1, 30)
    main_rows = pa.table({"id": [1, 2], "dt": [recent, old]}, schema=SCHEMA)
    java.write(w, IDENT, main_rows)
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    shutil.copytree(ours, theirs)
    Catalog(w).get_table(B1).update_schema().set_option("partition.expiration-time", "7 d").set_option(
        "partition.expiration-check-interval", "0 s").commit()
    java.alter_table(str(theirs), B1,
                     {"change": "set_option", "key": "partition.expiration-time", "value": "7 d"},
                     {"change": "set_option", "key": "partition.expiration-check-interval", "value": "0 s"})
    more = pa.table({"id": [3], "dt": [recent]}, schema=SCHEMA)
    Catalog(w).get_table(B1).write_arrow(more)
    java.write(str(theirs), B1, more)
    expected = pa.table({"id": [1, 3], "dt": [recent, recent]}, schema=SCHEMA)
    for wh in (ours, theirs):
        assert [s["commitKind"] for s in java.snapshots(str(wh), B1)] == ["APPEND", "APPEND", "OVERWRITE"]
        assert_same_rows(java.read(str(wh), B1), expected)
        assert_same_rows(Catalog(str(wh)).get_table(B1).to_arrow(), expected)
        # the main branch: its one snapshot, both partitions
        assert [s["id"] for s in java.snapshots(str(wh), IDENT)] == [1]
        assert_same_rows(java.read(str(wh), IDENT), main_rows)
    # Java writes the branch after our expiry; we read what it reads
    java.write(w, B1, pa.table({"id": [4], "dt": [old]}, schema=SCHEMA))
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(), java.read(w, B1))

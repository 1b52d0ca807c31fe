"""Concurrent compactions by the two engines: whichever commits second finds its input files gone
and gives up cleanly; the table stays readable and equal in both engines."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError
from lake_assets.ops.compact import plan_compaction, run_compaction_tasks
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_table, compare_every_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _fill(java: PaimonJava, wh: str) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for k in range(4):
        java.write(wh, "db.t", pa.table({"id": pa.array(range(k, k + 10), pa.int64()), "v": [f"w{k}"] * 10}))


def _data_files(wh: str) -> set[str]:
    root = os.path.join(wh, "db.db", "t", "bucket-0")
    return {f for f in os.listdir(root) if f.startswith("data-")}


def test_java_compaction_loses_to_ours(java: PaimonJava, wh: str, lake: Catalog) -> None:
    _fill(java, wh)
    expected = java.read(wh, "db.t")
    with java.open_writer(wh, "db.t", commit_user="flink-compact", options={"write-only": "false"}) as w:
        w.compact(bucket=0, full=True)  # Java plans on the current files...
        lake.get_table("db.t").compact(full=True)  # ...we compact them away and commit first
        with pytest.raises(JavaError) as err:
            w.commit(1)
    assert err.value.mentions("conflicts detected")
    t = lake.get_table("db.t")
    # Java commits the (empty) APPEND part of its commit before the COMPACT part fails.
    compacts = [s.commit_user for s in t.snapshots() if s.commit_kind.value == "COMPACT"]
    assert len(compacts) == 1 and compacts[0] != "flink-compact"
    assert_same_table(t.to_arrow(), expected)
    compare_every_snapshot(java, wh, "db.t", t)


def test_our_compaction_loses_to_java(java: PaimonJava, wh: str, lake: Catalog) -> None:
    _fill(java, wh)
    expected = java.read(wh, "db.t")
    t = lake.get_table("db.t")
    plan = plan_compaction(t.store, full=True)
    messages = run_compaction_tasks(t.store, plan.tasks)
    ours = {f.file_name for m in messages for f in m.compact_after}
    assert ours and ours <= _data_files(wh)
    java.compact(wh, "db.t", full=True, options={"write-only": "false"})
    with pytest.raises(CommitConflictError):
        t.new_committer("lake-compact").commit(messages, check_committed=False)
    # Our rewritten files are removed; Java's stay; both read the same.
    assert not ours & _data_files(wh)
    t = t.refresh()
    assert_same_table(t.to_arrow(), expected)
    compare_every_snapshot(java, wh, "db.t", t)

"""Whose commits run the commit-time lifecycle of a ``write-only`` table (ops/commit_lifecycle.py).

Paimon (``AbstractFileStoreTable.newCommit``, 0.9 to HEAD) gives the committer of a write-only
table no tag manager and no partition expiry, so its writers make no automatic tag, expire no tag
and drop no partition; its dedicated compaction commits through a copy of the table with
``write-only = false`` and does all three. Java 0.9 pins the same in
tests/differential/test_write_only_lifecycle_java.py; here every core entry point is covered.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import partition_expire
from lake_assets.ops.commit import TableCommitter

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
LIFECYCLE = {"write-only": "true", "tag.automatic-creation": "process-time",
             "partition.expiration-time": "7 d", "partition.expiration-check-interval": "0 s"}


@pytest.fixture(autouse=True)
def _fresh_commit_time_checks() -> None:
    partition_expire._last_check.clear()


def _days_ago(*days: int) -> list[str]:
    return [(dt.date.today() - dt.timedelta(days=d)).isoformat() for d in days]


def _table(tmp_path: Any, **options: str) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                            options={"bucket": "1", **LIFECYCLE, **options})


def _partitions(t: Any) -> list[str]:
    return sorted(set(t.to_arrow().column("dt").to_pylist()))


def _writer_commits(t: Any) -> None:
    """The core writers' commits: write_arrow, a writer with its committer."""
    t.write_arrow(pa.table({"id": [1, 2], "dt": _days_ago(0, 30)}, schema=SCHEMA))
    writer = t.new_writer("w")
    writer.write_arrow(pa.table({"id": [3], "dt": _days_ago(0)}, schema=SCHEMA))
    t.new_committer("w").commit(writer.prepare_commit(), 1)
    writer.close()


@pytest.mark.parametrize("bucket", ["1", "-2"], ids=["fixed-bucket", "postpone"])
def test_writers_of_a_write_only_table_run_no_lifecycle_and_its_compaction_runs_it(tmp_path: Any,
                                                                                   bucket: str) -> None:
    t = _table(tmp_path, bucket=bucket)
    _writer_commits(t)
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    t.write_arrow(pa.table({"id": [4], "dt": _days_ago(0)}, schema=SCHEMA))
    # no automatic tag, the tag past its retention stays, the 30-day-old partition stays
    assert list(t.tags()) == ["short"]
    snapshots_before = t.latest_snapshot().id
    if bucket == "1":
        assert _partitions(t) == sorted(_days_ago(0, 30))
    result = t.compact(full=True)
    assert result.snapshot_id is not None
    # the compaction's commit: yesterday's automatic tag, "short" expired, the old partition dropped
    assert list(t.tags()) == _days_ago(1)
    assert _partitions(t) == _days_ago(0)
    assert t.latest_snapshot().id == result.snapshot_id + 1 > snapshots_before  # the expiry's OVERWRITE
    # and the writers after it still run none of it
    t.create_tag("short-2", time_retained=dt.timedelta(milliseconds=1))
    t.write_arrow(pa.table({"id": [5], "dt": _days_ago(40)}, schema=SCHEMA))
    assert sorted(t.tags()) == sorted([*_days_ago(1), "short-2"])
    if bucket == "1":
        assert _partitions(t) == sorted(_days_ago(0, 40))


def test_delete_where_of_a_write_only_table_runs_no_lifecycle(tmp_path: Any) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.a", SCHEMA, partition_keys=["dt"],
                         options={"bucket": "-1", "deletion-vectors.enabled": "true", **LIFECYCLE})
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": _days_ago(0, 0, 30)}, schema=SCHEMA))
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    t.delete_where([("id", "=", 2)])
    assert list(t.tags()) == ["short"] and sorted(t.to_arrow().column("id").to_pylist()) == [1, 3]
    t.compact(full=True)
    assert list(t.tags()) == _days_ago(1) and t.to_arrow().column("id").to_pylist() == [1]


def test_a_postpone_rescale_commit_runs_it_as_paimon_heads(tmp_path: Any) -> None:
    """HEAD's SparkPostponeStagedCommitter commits a rescale through
    ``PostponeUtils.tableForPostponeRewrite`` (write-only = false), the batch after it through the
    table itself: on a write-only table the rescale's OVERWRITE runs the lifecycle, the batch's
    APPEND does not. (Postpone tables are Paimon 1.1+: Java 0.9 cannot pin this.)"""
    from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets

    t = _table(tmp_path, bucket="-2", **{"postpone.default-bucket-num": "1",
                                          "postpone.target-row-num-per-bucket": "1"})
    today = _days_ago(0)[0]
    write_fixed_buckets(t.store, pa.table({"id": range(2), "dt": [today] * 2}, schema=SCHEMA))
    t.refresh().create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    write_fixed_buckets(t.refresh().store, pa.table({"id": [9], "dt": [today]}, schema=SCHEMA))  # fits: no rescale
    t = t.refresh()
    assert list(t.tags()) == ["short"] and t.latest_snapshot().id == 2
    # 40 rows need 40 buckets > 32 x 1: an OVERWRITE rescale (snapshot 3), then the APPEND (4)
    write_fixed_buckets(t.store, pa.table({"id": range(10, 50), "dt": [today] * 40}, schema=SCHEMA))
    t = t.refresh()
    assert [s.commit_kind.name for s in t.snapshots()][2:] == ["OVERWRITE", "APPEND"]
    assert {n: s.id for n, s in t.tags().items()} == {_days_ago(1)[0]: 1}  # "short" expired


def test_a_table_that_is_not_write_only_runs_it_at_every_writers_commit(tmp_path: Any) -> None:
    t = _table(tmp_path, **{"write-only": "false"})
    t.write_arrow(pa.table({"id": [1, 2], "dt": _days_ago(0, 30)}, schema=SCHEMA))
    assert list(t.tags()) == _days_ago(1) and _partitions(t) == _days_ago(0)


def test_the_committers_write_only_defaults_to_the_tables_and_compaction_overrides_it(tmp_path: Any) -> None:
    t = _table(tmp_path)
    assert TableCommitter(t.store, "u").write_only is True
    assert TableCommitter(t.store, "u", write_only=False).write_only is False
    plain = Catalog(str(tmp_path / "wh")).create_table("db.p", SCHEMA, options={"bucket": "-1"})
    assert TableCommitter(plain.store, "u").write_only is False

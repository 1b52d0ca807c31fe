"""Partition expiration and automatic tags against Paimon Java 0.9, both ways.

Partition expiration: a table written by either engine has its partitions expired by either
engine (Java: the ``expire_partitions`` procedure's `PartitionExpire`, no check interval); both
name the same partitions and both read the same rows afterwards. At commit time both follow the
committer's check interval: with ``partition.expiration-check-interval`` = 0 every commit checks,
with the default (1 h) a batch commit does not (Java's `PartitionExpire` starts its interval when
the committer is created; ours when the process first commits to the table).

Automatic tags: ``process-time`` tags written by one engine are continued by the other, and for
``watermark`` the same sequence of watermarks gives the same tag names and the same
``tag.num-retained-max`` survivors (Java commits the watermarks as Flink's sink does; our
commits carry the latest watermark forward, as Java's do).

Paimon 0.9 against 1.x, where it matters here: 0.9 has no ``partition.expiration-max-num`` (one run
expires every expired partition; 1.x caps it, default 100, as lake_assets does) and no
``partition.expiration-batch-size``; ``tag.automatic-creation``, ``tag.creation-period``,
``tag.num-retained-max``, ``partition.expiration-strategy`` (values-time, update-time) and the
check interval's start at committer creation are the same in both.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import partition_expire
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
ENGINES = ["java", "lake"]


def _create(java: PaimonJava, lake: Catalog, wh: str, who: str, name: str, options: dict[str, str],
            schema: pa.Schema = SCHEMA, partition_keys: tuple[str, ...] = ("dt",)) -> None:
    opts = {"bucket": "1", **options}
    keys = ["id", *partition_keys]
    if who == "java":
        java.create_table(wh, name, schema, primary_keys=keys, partition_keys=partition_keys, options=opts)
    else:
        lake.create_table(name, schema, primary_keys=keys, partition_keys=list(partition_keys), options=opts)


def _write(java: PaimonJava, lake: Catalog, wh: str, who: str, name: str, data: pa.Table) -> None:
    if who == "java":
        java.write(wh, name, data)
    else:
        lake.get_table(name).write_arrow(data)


def _expire(java: PaimonJava, lake: Catalog, wh: str, who: str, name: str) -> list[dict[str, str]]:
    """Expired partitions as {key: value text}, sorted."""
    if who == "java":
        expired = java.expire_partitions(wh, name)
    else:
        expired = [{k: str(v) for k, v in p.items()} for p in lake.get_table(name).expire_partitions().expired]
    return sorted(expired, key=lambda p: sorted(p.items()))


def _both_read(java: PaimonJava, lake: Catalog, wh: str, name: str, expected: pa.Table) -> None:
    columns = expected.column_names
    assert_same_rows(java.read(wh, name), expected, columns)
    assert_same_rows(lake.get_table(name).to_arrow(), expected, columns)


def _days_ago(*days: int, fmt: str = "%Y-%m-%d") -> list[str]:
    today = dt.date.today()
    return [(today - dt.timedelta(days=d)).strftime(fmt) for d in days]


@pytest.fixture(autouse=True)
def _fresh_commit_time_checks() -> None:
    """Each test is a new 'process' for commit-time expiry (ours keeps the last check per table path)."""
    partition_expire._last_check.clear()


# ---------------------------------------------------------------------------------------------
# Partition expiration on demand (the expire_partitions procedure)

VALUES_TIME_CASES = {
    # options, strftime of the partition values
    "default formatter": ({}, "%Y-%m-%d"),
    "yyyyMMdd": ({"partition.timestamp-formatter": "yyyyMMdd"}, "%Y%m%d"),
}


@pytest.mark.parametrize("case", sorted(VALUES_TIME_CASES))
@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("expirer", ENGINES)
def test_values_time_expiry_both_ways(java: PaimonJava, lake: Catalog, wh: str, writer: str, expirer: str,
                                      case: str) -> None:
    options, fmt = VALUES_TIME_CASES[case]
    _create(java, lake, wh, writer, "db.t", {"partition.expiration-time": "7 d", **options})
    days = _days_ago(0, 3, 10, 40, fmt=fmt)
    data = pa.table({"id": [1, 2, 3, 4, 5], "dt": [*days, "unknown"]}, schema=SCHEMA)  # "unknown": never parses
    _write(java, lake, wh, writer, "db.t", data)
    assert _expire(java, lake, wh, expirer, "db.t") == sorted([{"dt": days[2]}, {"dt": days[3]}],
                                                                key=lambda p: sorted(p.items()))
    _both_read(java, lake, wh, "db.t", data.filter(pa.array([True, True, False, False, True])))
    kinds = [s["commitKind"] for s in java.snapshots(wh, "db.t")]
    assert kinds == ["APPEND", "OVERWRITE"]  # one snapshot dropping every expired partition
    assert _expire(java, lake, wh, "lake" if expirer == "java" else "java", "db.t") == []  # the other: nothing left


TWO_KEYS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                      pa.field("hr", pa.string(), nullable=False)])


@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("expirer", ENGINES)
def test_timestamp_pattern_over_two_keys(java: PaimonJava, lake: Catalog, wh: str, writer: str,
                                         expirer: str) -> None:
    options = {"partition.expiration-time": "2 d", "partition.timestamp-pattern": "$dt $hr:00:00",
               "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss"}
    _create(java, lake, wh, writer, "db.t", options, schema=TWO_KEYS, partition_keys=("dt", "hr"))
    recent, old = _days_ago(1, 5, fmt="%Y%m%d")
    data = pa.table({"id": [1, 2, 3], "dt": [recent, old, old], "hr": ["10", "10", "23"]}, schema=TWO_KEYS)
    _write(java, lake, wh, writer, "db.t", data)
    assert _expire(java, lake, wh, expirer, "db.t") == [{"dt": old, "hr": "10"}, {"dt": old, "hr": "23"}]
    _both_read(java, lake, wh, "db.t", data.slice(0, 1))


@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("expirer", ENGINES)
def test_update_time_strategy(java: PaimonJava, lake: Catalog, wh: str, writer: str, expirer: str) -> None:
    """update-time: a partition expires when its newest file is older than the expiration time
    (file creation times are the writer's local clock in both engines)."""
    options = {"partition.expiration-time": "3 s", "partition.expiration-strategy": "update-time"}
    _create(java, lake, wh, writer, "db.t", options)
    old = pa.table({"id": [1, 2], "dt": ["a", "b"]}, schema=SCHEMA)
    _write(java, lake, wh, writer, "db.t", old)
    assert _expire(java, lake, wh, expirer, "db.t") == []  # written just now
    time.sleep(4)
    fresh = pa.table({"id": [3], "dt": ["b"]}, schema=SCHEMA)  # b gets a new file: b is young again
    _write(java, lake, wh, writer, "db.t", fresh)
    assert _expire(java, lake, wh, expirer, "db.t") == [{"dt": "a"}]
    _both_read(java, lake, wh, "db.t", pa.table({"id": [2, 3], "dt": ["b", "b"]}, schema=SCHEMA))


# ---------------------------------------------------------------------------------------------
# Partition expiration at commit time


@pytest.mark.parametrize("writer", ENGINES)
def test_commit_time_expiry_with_a_zero_check_interval(java: PaimonJava, lake: Catalog, wh: str,
                                                       writer: str) -> None:
    options = {"partition.expiration-time": "7 d", "partition.expiration-check-interval": "0 s"}
    _create(java, lake, wh, writer, "db.t", options)
    days = _days_ago(1, 30)
    _write(java, lake, wh, writer, "db.t", pa.table({"id": [1, 2], "dt": days}, schema=SCHEMA))
    _both_read(java, lake, wh, "db.t", pa.table({"id": [1], "dt": days[:1]}, schema=SCHEMA))
    kinds = [s["commitKind"] for s in java.snapshots(wh, "db.t")]
    assert kinds == ["APPEND", "OVERWRITE"]


@pytest.mark.parametrize("writer", ENGINES)
def test_a_batch_commit_waits_for_the_check_interval(java: PaimonJava, lake: Catalog, wh: str, writer: str) -> None:
    """Default interval (1 h): the interval starts with the committer (Java) or the process's first
    commit to the table (lake_assets), so a one-off batch commit expires nothing; a long-lived
    committer expires once the interval has passed."""
    _create(java, lake, wh, writer, "db.t", {"partition.expiration-time": "7 d"})
    data = pa.table({"id": [1, 2], "dt": _days_ago(1, 30)}, schema=SCHEMA)
    _write(java, lake, wh, writer, "db.t", data)
    _both_read(java, lake, wh, "db.t", data)
    assert [s["commitKind"] for s in java.snapshots(wh, "db.t")] == ["APPEND"]


# ---------------------------------------------------------------------------------------------
# Automatic tags


def _tags(java: PaimonJava, lake: Catalog, wh: str, name: str) -> dict[str, int]:
    """The table's tags as both engines list them (they must agree)."""
    ours = {n: s.id for n, s in lake.get_table(name).tags().items()}
    assert java.tags(wh, name) == ours
    return ours


@pytest.mark.parametrize("first", ENGINES)
def test_process_time_tags_continue_across_engines(java: PaimonJava, lake: Catalog, wh: str, first: str) -> None:
    """The first commit tags its snapshot with the last completed period (yesterday); later commits
    of the same day, by either engine, add none (the next period is not complete)."""
    second = "lake" if first == "java" else "java"
    _create(java, lake, wh, first, "db.t", {"tag.automatic-creation": "process-time",
                                             "tag.creation-period": "daily"})
    _write(java, lake, wh, first, "db.t", pa.table({"id": [1], "dt": ["a"]}, schema=SCHEMA))
    yesterday = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    assert _tags(java, lake, wh, "db.t") == {yesterday: 1}
    _write(java, lake, wh, second, "db.t", pa.table({"id": [2], "dt": ["a"]}, schema=SCHEMA))
    _write(java, lake, wh, first, "db.t", pa.table({"id": [3], "dt": ["a"]}, schema=SCHEMA))
    assert _tags(java, lake, wh, "db.t") == {yesterday: 1}


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


# Watermarks (UTC) of successive commits and the tag each one creates (None: none due).
DAILY = [
    ("2024-01-01T10:00", "2023-12-31"),  # first: the last completed day
    ("2024-01-01T20:00", None),  # 2024-01-01 is not complete yet
    ("2024-01-02T01:00", "2024-01-01"),
    ("2024-01-05T03:00", "2024-01-04"),  # days without commits are skipped (no tag.automatic-completion)
    ("2024-01-06T00:00", "2024-01-05"),  # exactly at the period's end
]
HOURLY_DELAYED = [  # tag.creation-delay 30 min: due 30 min after the period; named by the snapshot's time
    ("2024-01-01T10:10", "2024-01-01 09"),
    ("2024-01-01T11:20", None),  # 10:50 is before 11:00 (the end of the next period, 10:00-11:00)
    ("2024-01-01T11:40", "2024-01-01 10"),
    ("2024-01-01T13:20", "2024-01-01 12"),  # the period before 13:20 (not before 12:50, the delayed time)
]
WATERMARK_OPTIONS = {"tag.automatic-creation": "watermark", "tag.num-retained-max": "3"}
SEQUENCES = {"daily": ({"tag.creation-period": "daily"}, DAILY),
             "hourly-delayed": ({"tag.creation-period": "hourly", "tag.creation-delay": "30 min"}, HOURLY_DELAYED)}


def _row(i: int) -> list[Any]:
    return [i, "a"]


@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
def test_watermark_tags_same_names_and_survivors(java: PaimonJava, lake: Catalog, wh: str, sequence: str) -> None:
    """Java tags its own watermark commits (table j); on table l Java commits the same watermarks
    without tagging (dynamic option none) and each following lake_assets commit, which carries the
    watermark forward, tags for us. Same names, same survivors of tag.num-retained-max."""
    extra, marks = SEQUENCES[sequence]
    options = {"bucket": "1", **WATERMARK_OPTIONS, **extra}
    java.create_table(wh, "db.j", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    lake.create_table("db.l", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    created_java: list[str] = []
    created_lake: list[str] = []
    for i, (mark, _) in enumerate(marks, start=1):
        before = set(_tags(java, lake, wh, "db.j"))
        java.commit_watermark(wh, "db.j", [_row(i)], commit_identifier=i, watermark=_ms(mark))
        created_java += sorted(set(_tags(java, lake, wh, "db.j")) - before)

        before = set(_tags(java, lake, wh, "db.l"))
        java.commit_watermark(wh, "db.l", [_row(i)], commit_identifier=i, watermark=_ms(mark),
                              options={"tag.automatic-creation": "none"})  # Java commits, does not tag
        assert set(_tags(java, lake, wh, "db.l")) == before
        lake.get_table("db.l").write_arrow(pa.table({"id": [100 + i], "dt": ["a"]}, schema=SCHEMA))
        created_lake += sorted(set(_tags(java, lake, wh, "db.l")) - before)
        assert lake.get_table("db.l").latest_snapshot().watermark == _ms(mark)  # carried forward
    expected = [due for _, due in marks if due]
    assert created_java == created_lake == expected
    assert sorted(_tags(java, lake, wh, "db.j")) == sorted(_tags(java, lake, wh, "db.l")) == expected[-3:]


def test_watermark_tags_continue_across_engines(java: PaimonJava, lake: Catalog, wh: str) -> None:
    """Java's watermark tags are where ours continue from, and ours where Java's continue from."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                      options={"bucket": "1", **WATERMARK_OPTIONS, "tag.creation-period": "daily"})
    java.commit_watermark(wh, "db.t", [_row(1)], commit_identifier=1, watermark=_ms("2024-01-01T10:00"))
    assert _tags(java, lake, wh, "db.t") == {"2023-12-31": 1}
    lake.get_table("db.t").write_arrow(pa.table({"id": [2], "dt": ["a"]}, schema=SCHEMA))  # same watermark
    assert _tags(java, lake, wh, "db.t") == {"2023-12-31": 1}
    java.commit_watermark(wh, "db.t", [_row(3)], commit_identifier=2, watermark=_ms("2024-01-02T01:00"))
    assert _tags(java, lake, wh, "db.t") == {"2023-12-31": 1, "2024-01-01": 3}


@pytest.mark.parametrize("tagger", ENGINES)
def test_tags_enabled_on_a_table_with_history(java: PaimonJava, lake: Catalog, wh: str, tagger: str) -> None:
    """Automatic tags switched on for a table that already has snapshots: the next commit looks at
    every snapshot since the last automatic tag (none: from the earliest), as Java's
    TagAutoCreation does, and tags the first one whose time completes a period."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    for i, mark in enumerate(["2024-01-01T10:00", "2024-01-02T10:00", "2024-01-02T11:00"], start=1):
        java.commit_watermark(wh, "db.t", [_row(i)], commit_identifier=i, watermark=_ms(mark))
    lake.get_table("db.t").update_schema().set_option("tag.automatic-creation", "watermark").commit()
    if tagger == "java":
        java.commit_watermark(wh, "db.t", [_row(9)], commit_identifier=9, watermark=_ms("2024-01-02T12:00"))
    else:
        lake.get_table("db.t").write_arrow(pa.table({"id": [9], "dt": ["a"]}, schema=SCHEMA))
    # snapshot 1 (Jan 1) completes Dec 31, snapshot 2 (Jan 2) Jan 1; the tagger's own commit none
    assert _tags(java, lake, wh, "db.t") == {"2023-12-31": 1, "2024-01-01": 2}

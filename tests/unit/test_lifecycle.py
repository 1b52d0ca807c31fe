"""Partition expiration and automatic tags (ops/partition_expire.py, ops/tag_auto.py)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, OptionError, SnapshotNotFoundError, UnsupportedFeatureError
from lake_assets.ops import partition_expire, tag_auto
from lake_assets.ops.partition_expire import PartitionTimeExtractor
from lake_assets.ops.tag_auto import PeriodHandler, run_tag_automation
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def _table(tmp_path, options, schema=SCHEMA, partition_keys=("dt",)):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema, primary_keys=["id", *partition_keys], partition_keys=list(partition_keys),
                            options={"bucket": "1", **options})


def _days(n, fmt="%Y-%m-%d"):
    today = dt.date.today()
    return [(today - dt.timedelta(days=i)).strftime(fmt) for i in range(n)]


def test_values_time_expires_old_partitions_in_one_overwrite_snapshot(tmp_path):
    t = _table(tmp_path, {})
    days = _days(5)
    t.write_arrow(pa.table({"id": range(5), "dt": days}))
    before = t.latest_snapshot().id
    res = t.expire_partitions(dt.timedelta(days=2))
    # a day's partition expires once its midnight is more than two days ago: today-2 already has
    assert sorted(p["dt"] for p in res.expired) == sorted(days[2:])
    snap = t.latest_snapshot()
    assert snap.id == before + 1 and snap.commit_kind == CommitKind.OVERWRITE
    assert sorted(t.to_arrow().column("dt").to_pylist()) == sorted(days[:2])
    # time travel to before the expiry still reads the dropped partitions
    assert t.to_arrow(snapshot_id=before).num_rows == 5
    # nothing left to expire: no new snapshot
    assert t.expire_partitions(dt.timedelta(days=2)).snapshot_id is None
    assert t.latest_snapshot().id == snap.id


def test_dry_run_and_max_num_drop_oldest_first(tmp_path):
    t = _table(tmp_path, {"partition.expiration-max-num": "1"})
    days = _days(4)
    t.write_arrow(pa.table({"id": range(4), "dt": days}))
    dry = t.expire_partitions(dt.timedelta(days=1), dry_run=True)
    assert [p["dt"] for p in dry.expired] == [days[3]] and dry.snapshot_id is None
    assert t.to_arrow().num_rows == 4
    t.expire_partitions(dt.timedelta(days=1))
    assert days[3] not in t.to_arrow().column("dt").to_pylist()


def test_pattern_and_formatter_and_unparseable_kept(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("d", pa.string()), ("h", pa.string())])
    t = _table(tmp_path, {"partition.timestamp-pattern": "$d $h:00:00",
                          "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss"},
               schema=schema, partition_keys=("d", "h"))
    old = (dt.date.today() - dt.timedelta(days=10)).strftime("%Y%m%d")
    new = dt.date.today().strftime("%Y%m%d")
    t.write_arrow(pa.table({"id": [1, 2, 3], "d": [old, new, "garbage"], "h": ["05", "00", "01"]}))
    res = t.expire_partitions(dt.timedelta(days=3))
    assert res.expired == [{"d": old, "h": "05"}]
    assert res.unparseable == [{"d": "garbage", "h": "01"}]
    assert sorted(t.to_arrow().column("d").to_pylist()) == sorted([new, "garbage"])


def test_update_time_strategy_uses_newest_file(tmp_path):
    t = _table(tmp_path, {"partition.expiration-strategy": "update-time"})
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["1999-01-01", "1999-01-02"]}))
    # values are ancient, but every file was written just now: nothing is older than an hour
    assert t.expire_partitions(dt.timedelta(hours=1)).expired == []
    later = dt.datetime.now() + dt.timedelta(hours=2)
    from lake_assets.ops.partition_expire import expire_partitions
    assert len(expire_partitions(t.store, expiration_time=dt.timedelta(hours=1), now=later).expired) == 2


def test_commit_time_expiry_from_options(tmp_path):
    """As Paimon's committer: the check interval starts with the writer (here the process's first
    commit to the table), so the first commit expires nothing unless the interval is 0."""
    t = _table(tmp_path, {"partition.expiration-time": "2 d", "partition.timestamp-formatter": "yyyyMMdd"})
    days = _days(5, "%Y%m%d")
    t.write_arrow(pa.table({"id": range(5), "dt": days}))
    assert sorted(t.to_arrow().column("dt").to_pylist()) == sorted(days)
    partition_expire._last_check[t.paths.root] -= 3601  # an hour (the default interval) later
    t.write_arrow(pa.table({"id": [9], "dt": days[:1]}))
    assert sorted(t.to_arrow().column("dt").to_pylist()) == sorted([*days[:2], days[0]])
    assert [s.commit_kind for s in t.snapshots()][-1] == CommitKind.OVERWRITE

    zero = _table(tmp_path / "zero", {"partition.expiration-time": "2 d", "partition.expiration-check-interval": "0 s",
                                      "partition.timestamp-formatter": "yyyyMMdd"})
    zero.write_arrow(pa.table({"id": range(5), "dt": days}))
    assert sorted(zero.to_arrow().column("dt").to_pylist()) == sorted(days[:2])


def test_errors(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    flat = cat.create_table("db.flat", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        flat.expire_partitions(dt.timedelta(days=1))
    t = _table(tmp_path, {})
    with pytest.raises(InvalidArgumentError, match=r"partition\.expiration-time"):
        t.expire_partitions()
    with pytest.raises(OptionError, match="pattern letter 'Q'"):
        cat.create_table("db.bad", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "partition.timestamp-formatter": "yyyyQQ"})
    with pytest.raises(UnsupportedFeatureError, match="batch tag creation"):
        cat.create_table("db.bad2", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "tag.automatic-creation": "batch"})
    with pytest.raises(OptionError, match=r"tag\.creation-period"):
        cat.create_table("db.bad3", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "tag.creation-period": "weekly"})


def test_extractor_default_format():
    ex = PartitionTimeExtractor()
    assert ex.extract(("dt",), ("2024-01-02",)) == dt.datetime(2024, 1, 2)
    assert ex.extract(("dt",), ("2024-01-02 10:11:12",)) == dt.datetime(2024, 1, 2, 10, 11, 12)
    with pytest.raises(ValueError):
        ex.extract(("dt",), ("20240102",))


def test_period_handler_names():
    daily = PeriodHandler("daily")
    assert daily.previous_period(dt.datetime(2024, 1, 2, 10)) == dt.datetime(2024, 1, 1)
    assert daily.tag_name(dt.datetime(2024, 1, 1)) == "2024-01-01"
    assert daily.tag_time("2024-01-01") == dt.datetime(2024, 1, 1) and daily.tag_time("release") is None
    hourly = PeriodHandler("hourly", "without_dashes")
    assert hourly.tag_name(hourly.previous_period(dt.datetime(2024, 1, 2, 10, 30))) == "20240102 09"


def test_automatic_tags_per_period_and_retention(tmp_path, monkeypatch):
    t = _table(tmp_path, {"tag.automatic-creation": "process-time", "tag.num-retained-max": "2",
                          "tag.default-time-retained": "1 h"})
    t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    yesterday = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    assert list(t.tags()) == [yesterday]  # the first commit tags the last completed period
    t.create_tag("manual")
    t.write_arrow(pa.table({"id": [2], "dt": ["a"]}))
    assert sorted(t.tags()) == sorted([yesterday, "manual"])  # the next period has not completed
    # commits on the following days (their snapshots' times shifted): one tag per completed period
    real, shift = tag_auto._snapshot_time, {}
    monkeypatch.setattr(tag_auto, "_snapshot_time",
                        lambda mode, snap: real(mode, snap) + dt.timedelta(days=shift.get(snap.id, 0)))
    for days_later in (1, 2, 3):
        shift[t.latest_snapshot().id + 1] = days_later
        t.write_arrow(pa.table({"id": [10 + days_later], "dt": ["a"]}))
    auto = sorted(n for n in t.tags() if n != "manual")
    # num-retained-max=2 keeps the two newest automatic tags; the manual tag is never counted
    assert len(auto) == 2 and "manual" in t.tags()
    assert auto[-1] == (dt.date.today() + dt.timedelta(days=2)).isoformat()
    # tag.default-time-retained: automatic tags expire an hour after creation; manual ones stay
    run_tag_automation(t.store, t.latest_snapshot(), now=dt.datetime.now() + dt.timedelta(hours=2))
    assert list(t.tags()) == ["manual"]


def test_a_tag_past_its_own_retention_expires_at_the_next_commit_without_options(tmp_path, monkeypatch):
    """Paimon's committer runs TagTimeExpire at every commit (0.9 to HEAD), whatever the options: a
    tag created with a retention (``create_tag(time_retained=...)``, Java's procedure, pypaimon's)
    goes once it has passed; tags without one stay, and a branch's or a write-only table's commit
    touches no tag."""
    t = _table(tmp_path, {})
    t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    t.create_tag("long", time_retained=dt.timedelta(days=1))
    t.create_tag("plain")
    t.create_branch("dev", tag="plain")
    branch = Catalog(str(tmp_path / "wh")).get_table("db.t$branch_dev")
    branch.write_arrow(pa.table({"id": [2], "dt": ["a"]}))
    assert sorted(t.tags()) == ["long", "plain", "short"]
    t.write_arrow(pa.table({"id": [3], "dt": ["a"]}))
    assert sorted(t.tags()) == ["long", "plain"]
    # later commits read no tag file again while the listing shows it unchanged; a replaced one is read
    reads: list[str] = []
    io = t.store.file_io
    real_read = io.read_bytes
    monkeypatch.setattr(io, "read_bytes", lambda path, *a, **k: reads.append(path) or real_read(path, *a, **k))
    t.write_arrow(pa.table({"id": [4], "dt": ["a"]}))
    assert not [p for p in reads if "/tag/" in p] and sorted(t.tags()) == ["long", "plain"]
    long_tag = t.store.paths.tag_file("long")
    io.write_bytes(long_tag, real_read(long_tag).replace(b'"tagTimeRetained": 86400.0', b'"tagTimeRetained": 0.001'))
    t.write_arrow(pa.table({"id": [5], "dt": ["a"]}))
    assert long_tag in reads and sorted(t.tags()) == ["plain"]
    # a write-only table's commits expire no tag (Paimon's committer of one has no tag manager)
    cat = Catalog(str(tmp_path / "wh"))
    w = cat.create_table("db.w", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "write-only": "true"})
    w.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    w.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    w.write_arrow(pa.table({"id": [2], "dt": ["a"]}))
    assert list(w.tags()) == ["short"]


def test_options_no_longer_unknown(tmp_path):
    t = _table(tmp_path, {"partition.expiration-time": "7 d", "partition.expiration-check-interval": "1 h",
                          "partition.timestamp-pattern": "$dt", "partition.timestamp-formatter": "yyyy-MM-dd",
                          "tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                          "tag.num-retained-max": "24", "tag.creation-delay": "10 min",
                          "tag.period-formatter": "without_dashes"})
    assert t.schema.core_options.partition_expiration_time_ms == 7 * 86_400_000
    # watermark mode: a snapshot without a watermark tags nothing
    t.write_arrow(pa.table({"id": [1], "dt": [dt.date.today().isoformat()]}))
    assert t.tags() == {}


def test_read_changes_past_latest_names_the_latest_snapshot(tmp_path):
    t = _table(tmp_path, {})
    t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    with pytest.raises(SnapshotNotFoundError, match="up to snapshot 7: the latest is 1") as info:
        t.read_changes(0, 7)
    assert "expired" not in str(info.value)


def test_every_bad_option_is_reported_at_once_with_the_valid_values(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    with pytest.raises(OptionError) as info:
        cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={
            "bucket": "x", "changelog-producer": "lookp", "tag.creation-period": "weekly"})
    text = str(info.value)
    assert "3 problems" in text and "'bucket': 'x' is not an integer" in text
    assert "did you mean 'lookup'" in text and "is not one of ['none', 'input', 'lookup', 'full-compaction']" in text
    assert "['daily', 'hourly', 'two-hours']" in text


def test_a_failing_lifecycle_step_does_not_fail_the_landed_commit(tmp_path, monkeypatch):
    t = _table(tmp_path, {"tag.automatic-creation": "process-time"})

    def broken(*args, **kwargs):
        raise OSError("tag directory unwritable")

    monkeypatch.setattr("lake_assets.ops.tag_auto.run_tag_automation", broken)
    sid = t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    assert sid == 1 and t.to_arrow().num_rows == 1 and t.tags() == {}

"""Time travel edges: between, before and after snapshots; missing snapshots and tags."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SnapshotNotFoundError
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def two_snapshots(java: PaimonJava, wh: str, lake: Catalog):
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    java.write(wh, "db.t", pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    time.sleep(0.02)  # distinct commit times
    java.write(wh, "db.t", pa.table({"id": pa.array([2], pa.int64()), "v": ["b"]}))
    return lake.get_table("db.t"), java.snapshots(wh, "db.t")


def test_timestamps_between_and_after_snapshots(java: PaimonJava, wh: str, two_snapshots) -> None:
    t, snaps = two_snapshots
    first, second = snaps[0]["timeMillis"], snaps[1]["timeMillis"]
    for ts in (first, first + 1, second - 1, second, second + 10**6):
        assert_same_table(t.to_arrow(timestamp=ts), java.read(wh, "db.t", timestamp_millis=ts))


def test_timestamp_before_the_first_snapshot_follows_paimon_1x(java: PaimonJava, wh: str, two_snapshots) -> None:
    """Java 0.9 predates the behaviour we follow here.

    Paimon 1.x's StaticFromTimestampStartingScanner refuses a time before the earliest snapshot
    ("There is currently no snapshot earlier than or equal to timestamp [...]"); Java 0.9 still
    reads the earliest snapshot. We raise, as 1.x does.
    """
    t, snaps = two_snapshots
    ts = snaps[0]["timeMillis"] - 1000
    assert_same_table(java.read(wh, "db.t", timestamp_millis=ts), java.read(wh, "db.t", snapshot_id=1))
    with pytest.raises(SnapshotNotFoundError, match="no snapshot committed at or before"):
        t.to_arrow(timestamp=ts)


def test_missing_snapshot_or_tag_is_refused_by_both(java: PaimonJava, wh: str, two_snapshots) -> None:
    t, _ = two_snapshots
    for kwargs, java_kwargs in (({"snapshot_id": 3}, {"snapshot_id": 3}), ({"snapshot_id": 0}, {"snapshot_id": 0}),
                                ({"tag": "nope"}, {"tag": "nope"})):
        with pytest.raises(JavaError) as err:
            java.read(wh, "db.t", **java_kwargs)
        assert err.value.java_class == "java.lang.IllegalArgumentException"
        with pytest.raises(SnapshotNotFoundError):
            t.to_arrow(**kwargs)

"""A read whose planned snapshot was expired (and files removed) meanwhile is a retryable race,
not corruption; change reads refuse a user column that clashes with their row kind column."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog, ConcurrentMaintenanceError, CorruptMetadataError, SchemaError
from lake_assets.ops.stream import change_splits_between

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


@pytest.fixture
def t(catalog: Catalog):
    table = catalog.create_table("db.r", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "write-only": "true", "snapshot.num-retained.min": "1"})
    for lo in (0, 100, 200):  # disjoint key ranges: three sections, read one after another
        table.write_arrow(pa.table({"k": pa.array(range(lo, lo + 10), pa.int64()), "v": ["x"] * 10}))
    return table


def _compact_and_expire(table) -> None:
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))


def test_batch_read_racing_expiry_is_retryable(t):
    batches = t.to_batches()
    first = next(batches)
    _compact_and_expire(t)
    with pytest.raises(ConcurrentMaintenanceError, match=r"snapshot 3 was expired while the read ran.*retry"):
        list(batches)
    assert first.num_rows == 10
    assert t.to_arrow().num_rows == 30  # a fresh plan reads the compacted files


def test_change_read_racing_expiry_is_retryable(t):
    splits = change_splits_between(t.store, 0, 3)
    reader = t.change_reader()
    _compact_and_expire(t)
    with pytest.raises(ConcurrentMaintenanceError, match="snapshot 1 was expired"):
        reader.read(splits[0])


def test_file_missing_under_a_live_snapshot_is_corruption(t):
    split = t.plan()[0]
    os.remove(t.store.data_file_path(split.partition, split.bucket, split.files[0]))
    with pytest.raises(CorruptMetadataError, match="is missing") as info:
        t.to_arrow()
    assert not isinstance(info.value, ConcurrentMaintenanceError)


def test_change_reads_refuse_a_row_kind_user_column(catalog: Catalog):
    table = catalog.create_table("db.rk", pa.schema([("k", pa.int64()), ("_row_kind", pa.string())]),
                                 primary_keys=["k"], options={"bucket": "1"})
    table.write_arrow(pa.table({"k": pa.array([1], pa.int64()), "_row_kind": ["mine"]}))
    assert table.to_arrow().column("_row_kind").to_pylist() == ["mine"]  # batch reads are fine
    with pytest.raises(SchemaError, match=r"column '_row_kind' clashes with the row kind column"):
        table.read_changes(0, 1)
    with pytest.raises(SchemaError, match="_row_kind"):
        table.change_reader()

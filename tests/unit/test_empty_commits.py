"""Commits without changes on tables asking for their snapshot (`lake_assets.ops.commit_empty`):
``snapshot.ignore-empty-commit = false`` (Paimon 1.x batch commits; streaming ones then too) and
``commit.force-create-snapshot = true`` (streaming commits only, as Paimon's Flink committer).
The empty snapshot is an APPEND with no files that carries its commit user and identifier, and
expiry, streams, consumers, tags and time travel take it as any other snapshot.
(`tests/differential/test_empty_commits_java.py` compares the snapshot with Java 0.9's,
`tests/interop/test_empty_commits_pypaimon.py` with pypaimon 2.1's.)"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.stream import iter_stream
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
ROWS = pa.table({"k": [1, 2], "v": ["a", "b"], "dt": ["d1", "d2"]}, schema=SCHEMA)


def _table(catalog: Catalog, **options: str) -> Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", **options})
    t.write_arrow(ROWS)
    return t


def _assert_empty_append(t: Table, sid: int, identifier: int, user: str | None = None) -> None:
    snap, before = t.snapshot(sid), t.snapshot(sid - 1)
    assert snap.commit_kind == CommitKind.APPEND and snap.commit_identifier == identifier
    if user is not None:
        assert snap.commit_user == user
    assert (snap.delta_record_count, snap.changelog_record_count) == (0, 0)
    assert snap.total_record_count == before.total_record_count
    assert snap.changelog_manifest_list is None and snap.index_manifest == before.index_manifest
    assert snap.watermark == before.watermark and snap.schema_id == before.schema_id
    mio = t.store.manifest_io()
    assert mio.read_manifest_list(snap.delta_manifest_list) == []
    assert t.to_arrow(snapshot_id=sid).sort_by("k").equals(t.to_arrow(snapshot_id=sid - 1).sort_by("k"))


def test_batch_commits_without_changes_make_no_snapshot_by_default(catalog: Catalog):
    t = _table(catalog, **{"commit.force-create-snapshot": "true"})  # streaming commits only
    assert t.write_arrow(SCHEMA.empty_table()) is None
    assert t.new_committer("u").commit([]) == []
    assert t.new_committer("u").commit([], 7) == [2]  # a streaming identifier: forced
    _assert_empty_append(t, 2, 7, "u")
    assert t.new_committer("u").commit([], 7) == []  # exactly once, as any commit
    plain = catalog.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], options={"bucket": "1"})
    plain.write_arrow(ROWS)
    assert plain.new_committer("u").commit([], 7) == [] and plain.write_arrow(SCHEMA.empty_table()) is None
    assert plain.snapshot_manager.latest_id() == 1


def test_ignore_empty_commit_false_makes_batch_and_streaming_commits_snapshots(catalog: Catalog):
    t = _table(catalog, **{"snapshot.ignore-empty-commit": "false"})
    assert t.write_arrow(SCHEMA.empty_table()) == 2
    _assert_empty_append(t, 2, BATCH_COMMIT_IDENTIFIER)
    writer = t.new_writer("w")
    assert t.new_committer("w").commit(writer.prepare_commit(), 1) == [3]  # a writer that wrote nothing
    _assert_empty_append(t, 3, 1, "w")
    # an overwrite follows its own rule: a dynamic overwrite of no rows replaces nothing, commits nothing
    assert t.write_arrow(SCHEMA.empty_table(), overwrite=True) is None
    assert t.to_arrow().num_rows == 2 and t.snapshot_manager.latest_id() == 3


def test_the_options_can_be_set_and_altered(catalog: Catalog):
    t = _table(catalog)
    t.update_schema().set_option("snapshot.ignore-empty-commit", "false").commit()
    t.refresh()
    assert t.write_arrow(SCHEMA.empty_table()) == 2
    t.update_schema().set_option("snapshot.ignore-empty-commit", "true").set_option(
        "commit.force-create-snapshot", "true").commit()
    t.refresh()
    assert t.write_arrow(SCHEMA.empty_table()) is None and t.new_committer("s").commit([], 1) == [3]


def test_streams_consumers_expiry_and_tags_take_empty_snapshots(catalog: Catalog):
    t = _table(catalog, **{"commit.force-create-snapshot": "true", "snapshot.num-retained.min": "1",
                           "snapshot.num-retained.max": "1"})
    stream = t.stream(mode="latest-full", consumer_id="c")
    reader = t.change_reader(stream=stream)
    assert sum(b.num_rows for _, b in iter_stream(stream, reader)) == 2
    committer = t.new_committer("s")
    assert committer.commit([], 1) == [2]
    more = pa.table({"k": [3], "v": ["c"], "dt": ["d1"]}, schema=SCHEMA)
    writer = t.new_writer("s")
    writer.write_arrow(more)
    assert committer.commit(writer.prepare_commit(), 2) == [3]
    assert committer.commit([], 3) == [4]
    t.create_tag("empty", 4)
    # the stream reads nothing from the empty snapshots and the row of snapshot 3, in order
    got = [(pos, b.num_rows) for pos, b in iter_stream(stream, reader)]
    assert got == [(3, 0), (4, 1), (5, 0)]
    # expiry keeps what the consumer has not read (nothing now), the latest and the tag's snapshot
    t.expire_snapshots()
    assert [s.id for s in t.snapshots()] == [4]
    assert t.to_arrow(tag="empty").num_rows == 3 and t.to_arrow().num_rows == 3
    assert t.new_committer("s").commit([], 4) == [5]
    resumed = t.stream(mode="latest", consumer_id="c")
    assert resumed.position == 5 and [b.snapshot_id for b in resumed.poll()] == [5]

"""Maintenance that must not trust stale or damaged state.

- expiry that cannot read the manifest lists of the first snapshot it keeps stops, deleting nothing;
- a tag or consumer position published while an expiration runs is either kept by it or refused;
- a partitioned table's ``partition.default-name`` cannot change once it has data, and orphan
  removal never deletes a file a manifest names, wherever it sits.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError, SchemaError, SnapshotNotFoundError
from lake_assets.ops.expire import expire_snapshots
from lake_assets.store import manifest_io
from tests.reliability.crash_run import run_crash_worker

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
FUTURE = datetime.now() + timedelta(days=1)


def _table(tmp_path, **options: str):
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true", **options})
    return wh, t


def _batch(ks, v) -> pa.Table:
    return pa.table({"k": list(ks), "v": [v] * len(ks)}, schema=SCHEMA)


def _files(wh: str) -> set[str]:
    return {str(p) for p in Path(wh).rglob("*") if p.is_file() and "EXPIRING-" not in p.name}


def _history(t) -> None:
    """Snapshots whose files later snapshots delete (writes, a full compaction, more writes)."""
    for i in range(3):
        t.write_arrow(_batch(range(10), i))
    t.compact(full=True)
    for i in range(3, 6):
        t.write_arrow(_batch(range(5), i))


def _reads(t, **kw) -> dict:
    return {r["k"]: r["v"] for r in t.to_arrow(**kw).to_pylist()}


# ------------------------------------------------------------------------ unreadable manifest lists
@pytest.mark.parametrize("damage", ["garbage", "missing"])
def test_expiry_stops_when_the_first_kept_snapshot_lists_are_unreadable(tmp_path, damage):
    wh, t = _table(tmp_path)
    _history(t)
    first_kept = t.snapshot(6)  # retain_min=2 keeps 6 and 7
    path = Path(t.paths.manifest_file(first_kept.base_manifest_list))
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not avro at all")
    else:
        path.unlink()
    manifest_io._cache_slot.cache_clear()  # the damage must be seen on storage
    before = _files(wh)
    with pytest.raises(CorruptMetadataError, match=r"first one kept.*nothing was deleted"):
        t.expire_snapshots(retain_min=2, older_than=FUTURE)
    assert _files(wh) == before
    assert t.snapshot_manager.expiring_below() is None  # it stopped before deleting: no marker left
    assert t.create_tag("still-whole", snapshot_id=2).snapshot.id == 2
    t.delete_tag("still-whole")
    # repaired, the expiry runs and every retained snapshot still reads
    path.write_bytes(good)
    manifest_io._cache_slot.cache_clear()
    t.expire_snapshots(retain_min=2, older_than=FUTURE)
    assert [s.id for s in t.snapshots()] == [6, 7]
    for s in t.snapshots():
        _reads(t, snapshot_id=s.id)


# ------------------------------------------------------------------ tags and consumers during expiry
def test_tag_created_while_expiry_deletes_is_refused(tmp_path):
    wh, t = _table(tmp_path)
    _history(t)
    other = Catalog(wh).get_table("db.t")  # another process's view of the table
    outcome: dict[str, object] = {}

    def delete_files(paths: list[str]) -> None:
        # expiry has read tags and consumers and is about to delete: a tagger comes in now
        if "tag" not in outcome:
            try:
                outcome["tag"] = other.create_tag("old", snapshot_id=2)
            except SnapshotNotFoundError as exc:
                outcome["tag"] = exc
        t.file_io.delete_many(paths)

    expire_snapshots(t.store, retain_min=2, older_than_ms=int(FUTURE.timestamp() * 1000), delete_files=delete_files)
    assert isinstance(outcome["tag"], SnapshotNotFoundError), outcome
    assert "being expired" in str(outcome["tag"])
    assert "old" not in Catalog(wh).get_table("db.t").tags()  # withdrawn
    # tags on snapshots that stay, or after the expiry, are fine; expired ones are refused
    assert other.create_tag("kept", snapshot_id=6).snapshot.id == 6
    with pytest.raises(SnapshotNotFoundError):
        other.create_tag("gone", snapshot_id=2)


def test_tag_created_before_expiry_reads_tags_is_kept(tmp_path):
    wh, t = _table(tmp_path)
    _history(t)
    expected = _reads(t, snapshot_id=2)
    other = Catalog(wh).get_table("db.t")
    real = t.snapshot_manager.begin_expiry

    def tag_then_begin(end: int) -> str:
        other.create_tag("early", snapshot_id=2)  # published just before the marker
        return real(end)

    t.snapshot_manager.begin_expiry = tag_then_begin  # type: ignore[method-assign]
    t.expire_snapshots(retain_min=2, older_than=FUTURE)
    fresh = Catalog(wh).get_table("db.t")
    assert fresh.tags()["early"].id == 2
    assert _reads(fresh, tag="early") == expected  # every file the tag needs survived


def test_consumer_recorded_while_expiry_deletes_is_refused_and_restored(tmp_path):
    wh, t = _table(tmp_path)
    _history(t)
    other = Catalog(wh).get_table("db.t")
    other.store.consumer_manager().record("reader", 7)
    outcome: dict[str, object] = {}

    def delete_files(paths: list[str]) -> None:
        if "consumer" not in outcome:
            try:
                other.store.consumer_manager().record("reader", 2)
                outcome["consumer"] = "recorded"
            except SnapshotNotFoundError as exc:
                outcome["consumer"] = exc
        t.file_io.delete_many(paths)

    expire_snapshots(t.store, retain_min=2, older_than_ms=int(FUTURE.timestamp() * 1000), delete_files=delete_files)
    assert isinstance(outcome["consumer"], SnapshotNotFoundError), outcome
    assert other.store.consumer_manager().get("reader").next_snapshot == 7  # the previous position is back


def test_snapshots_of_a_killed_expiry_cannot_be_tagged(tmp_path):
    wh, t = _table(tmp_path)
    _history(t)
    rc, _, stderr = run_crash_worker([wh, "db.t", "expire", "expire.after_data", "1", json.dumps({"retain_min": 2})])
    assert rc == -9, stderr[-2000:]
    t = Catalog(wh).get_table("db.t")
    assert t.snapshot_manager.exists(2)  # still listed, but its compacted-away files are gone
    with pytest.raises(SnapshotNotFoundError, match="being expired"):
        t.create_tag("broken", snapshot_id=2)
    assert "broken" not in t.tags()
    t.expire_snapshots(retain_min=2, older_than=FUTURE)  # the re-run completes
    assert [s.id for s in t.snapshots()] == [6, 7]
    assert t.snapshot_manager.expiring_below() is None  # and withdraws the killed run's marker
    assert t.create_tag("ok", snapshot_id=6).snapshot.id == 6


# ---------------------------------------------------------------------------- partition.default-name
def _partitioned(tmp_path):
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
    # an append table: a primary key's partition columns could not be null
    t = cat.create_table("db.p", schema, partition_keys=["dt"], options={"write-only": "true"})
    return wh, t, schema


def test_default_partition_name_cannot_change_once_the_table_has_data(tmp_path):
    wh, t, schema = _partitioned(tmp_path)
    t.update_schema().set_option("partition.default-name", "NULLS").commit()  # no data yet: fine
    t.write_arrow(pa.table({"k": [1, 2], "dt": [None, "a"], "v": [1, 2]}, schema=schema))
    with pytest.raises(SchemaError, match=r"partition\.default-name"):
        t.update_schema().set_option("partition.default-name", "OTHER").commit()
    with pytest.raises(SchemaError, match=r"partition\.default-name"):
        t.update_schema().remove_option("partition.default-name").commit()
    fresh = Catalog(wh).get_table("db.p")
    assert fresh.schema.options["partition.default-name"] == "NULLS"
    assert sorted(r["k"] for r in fresh.to_arrow().to_pylist()) == [1, 2]


def test_orphan_removal_keeps_files_manifests_name_in_any_directory(tmp_path):
    """A null partition written under another default name (e.g. by an engine that allowed the
    ALTER): its files sit in a directory paths are no longer built to; they are not orphans."""
    wh, t, schema = _partitioned(tmp_path)
    t.write_arrow(pa.table({"k": [1, 2], "dt": [None, "a"], "v": [1, 2]}, schema=schema))
    old_dir = Path(t.paths.root) / "dt=__DEFAULT_PARTITION__"
    live = {str(p) for p in old_dir.rglob("*.parquet")}
    assert live
    # the schema file as such an engine leaves it (bypassing our ALTER check)
    schema1 = Path(t.paths.schema_file(0)).read_text()
    d = json.loads(schema1)
    d["id"] = 1
    d["options"]["partition.default-name"] = "RENAMED"
    Path(t.paths.schema_file(1)).write_text(json.dumps(d))
    fresh = Catalog(wh).get_table("db.p")
    assert fresh.schema.id == 1
    removed = fresh.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths
    assert not (set(removed) & live)
    assert all(Path(p).exists() for p in live)

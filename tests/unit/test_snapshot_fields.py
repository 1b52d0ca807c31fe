"""Log offsets and the statistics file a commit carries forward from the latest snapshot
(`lake_assets.ops.commit_inherit`), what expiry and orphan removal do with statistics files, and
empty static overwrites. (`tests/differential/test_snapshot_fields_java.py` checks all of it
against Paimon Java 0.9, whose ANALYZE and Flink commits make the history here.)"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.commit_snapshot import write_base_list
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
OFFSETS = {"0": 42, "1": 7}


def _rows(keys: range, dt: str = "d1") -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"v{k}" for k in keys], "dt": [dt] * len(keys)}, schema=SCHEMA)


def _table(catalog: Catalog, **options: str) -> Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", **options})
    t.write_arrow(_rows(range(10)))
    return t


def analyze_as_java(t: Table, schema_id: int | None = None, offsets: dict[str, int] | None = None) -> str:
    """What Java's ``commitStatistics`` leaves: a statistics file and an ANALYZE snapshot naming it
    (here also carrying ``offsets``, as a Flink commit with a log system would)."""
    store = t.store
    latest = store.snapshot_manager.latest()
    assert latest is not None
    name = f"stats-{uuid.uuid4()}-0"
    stats = {"snapshotId": latest.id, "schemaId": latest.schema_id if schema_id is None else schema_id,
             "mergedRecordCount": latest.total_record_count, "mergedRecordSize": 100, "colStats": {}}
    store.file_io.write_bytes(store.paths.statistics_file(name), json.dumps(stats).encode())
    mio, written = store.manifest_io(), []
    base = write_base_list(store, mio, latest, written)
    delta = mio.write_manifest_list([])
    snap = replace(latest, id=latest.id + 1, commit_kind=CommitKind.ANALYZE, statistics=name,
                   base_manifest_list=base[0], base_manifest_list_size=base[1], delta_manifest_list=delta[0],
                   delta_manifest_list_size=delta[1], changelog_manifest_list=None, delta_record_count=0,
                   log_offsets=offsets or latest.log_offsets, time_millis=latest.time_millis + 1)
    assert store.snapshot_manager.try_commit(snap)
    return name


def test_every_commit_kind_carries_log_offsets_and_statistics(catalog: Catalog) -> None:
    t = _table(catalog, **{"snapshot.ignore-empty-commit": "false"})
    name = analyze_as_java(t, offsets=OFFSETS)
    since = t.snapshot_manager.latest_id()
    t.write_arrow(_rows(range(5, 15)))                                  # APPEND
    t.compact(full=True)                                                # COMPACT
    t.write_arrow(_rows(range(3), "d2"), overwrite={"dt": "d2"})        # OVERWRITE
    t.write_arrow(SCHEMA.empty_table())                                 # an empty APPEND
    t.write_arrow(SCHEMA.empty_table(), overwrite={"dt": "none"})       # an empty OVERWRITE
    assert [(s.commit_kind, s.log_offsets, s.statistics) for s in t.snapshots() if s.id > since] == [
        (kind, OFFSETS, name) for kind in (CommitKind.APPEND, CommitKind.COMPACT, CommitKind.OVERWRITE,
                                           CommitKind.APPEND, CommitKind.OVERWRITE)]
    # the JSON is Java's: decimal bucket keys, the statistics file name
    d = json.loads(t.store.file_io.read_bytes(t.store.paths.snapshot_file(t.snapshot_manager.latest_id())))
    assert (d["logOffsets"], d["statistics"]) == (OFFSETS, name)


def test_a_commit_and_its_compaction_written_ahead_carry_them(catalog: Catalog,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")  # the COMPACT snapshot written beside the APPEND
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["k"], options={"bucket": "2",
                                                                          "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(100)))
    name = analyze_as_java(t, offsets=OFFSETS)
    since = t.snapshot_manager.latest_id()
    t.write_arrow(_rows(range(50, 150)))
    assert [(s.commit_kind, s.log_offsets, s.statistics) for s in t.snapshots() if s.id > since] == [
        (CommitKind.APPEND, OFFSETS, name), (CommitKind.COMPACT, OFFSETS, name)]


def test_statistics_of_another_schema_are_not_carried(catalog: Catalog) -> None:
    t = _table(catalog)
    analyze_as_java(t, offsets=OFFSETS)
    t.update_schema().add_column("extra", pa.int32()).commit()
    t = catalog.get_table("db.t")
    t.write_arrow(_rows(range(3)).append_column("extra", pa.nulls(3, pa.int32())))
    latest = t.snapshot_manager.latest()
    assert latest is not None and latest.statistics is None and latest.log_offsets == OFFSETS
    # stats written for the new schema are carried again
    name = analyze_as_java(t)
    t.write_arrow(_rows(range(3)).append_column("extra", pa.nulls(3, pa.int32())))
    assert t.snapshot_manager.latest().statistics == name  # type: ignore[union-attr]


@pytest.mark.parametrize("damage", ["missing", "not json", "no schema id"])
def test_unreadable_statistics_fail_the_commit_and_change_nothing(catalog: Catalog, damage: str) -> None:
    t = _table(catalog)
    name = analyze_as_java(t)
    path = t.store.paths.statistics_file(name)
    if damage == "missing":
        t.store.file_io.delete(path)
    else:
        t.store.file_io.write_bytes(path, b"{" if damage == "not json" else b'{"snapshotId": 2}')
    manifests = sorted(p.name for p in (Path(t.store.paths.root) / "manifest").iterdir())
    latest = t.snapshot_manager.latest_id()
    with pytest.raises(CorruptMetadataError, match=rf"Cannot commit to db.t: snapshot {latest} names statistics "
                                                    rf"file {name}"):
        t.write_arrow(_rows(range(3)))
    assert t.snapshot_manager.latest_id() == latest
    assert sorted(p.name for p in (Path(t.store.paths.root) / "manifest").iterdir()) == manifests


def test_snapshot_fields_read_from_storage_are_checked() -> None:
    base = {"id": 1, "schemaId": 0, "baseManifestList": "b", "deltaManifestList": "d", "commitUser": "u",
            "commitIdentifier": 1, "commitKind": "APPEND", "timeMillis": 1}
    assert Snapshot.from_dict({**base, "logOffsets": {"0": 5, "-1": 2}}).log_offsets == {"0": 5, "-1": 2}
    for bad in ({"x": 1}, {"0": "5"}, {"0": True}, {"0": 1.5}, [1], {"--1": 1}):
        with pytest.raises(CorruptMetadataError, match="logOffsets"):
            Snapshot.from_dict({**base, "logOffsets": bad})
    for bad_name in ("../stats", "/etc/passwd", "a/b"):
        with pytest.raises(CorruptMetadataError, match="statistics"):
            Snapshot.from_dict({**base, "statistics": bad_name})


def test_expiry_deletes_a_statistics_file_once_no_retained_snapshot_or_tag_names_it(catalog: Catalog) -> None:
    t = _table(catalog)
    name = analyze_as_java(t)
    path = Path(t.store.paths.statistics_file(name))
    for i in range(3):
        t.write_arrow(_rows(range(20 + i, 21 + i)))
    result = t.expire_snapshots(retain_min=1, retain_max=1)
    assert len(result.expired_snapshots) == 4 and result.deleted_statistics_files == [] and path.exists()
    assert str(path) not in t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths
    assert path.exists()
    # a tag keeps it after the snapshots naming it expire
    t.create_tag("keep")
    t.update_schema().add_column("extra", pa.int32()).commit()
    t = catalog.get_table("db.t")
    t.write_arrow(_rows(range(3)).append_column("extra", pa.nulls(3, pa.int32())))
    assert t.snapshot_manager.latest().statistics is None  # type: ignore[union-attr]
    result = t.expire_snapshots(retain_min=1, retain_max=1)
    assert result.expired_snapshots and result.deleted_statistics_files == [] and path.exists()
    assert str(path) not in t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths
    assert path.exists()
    t.delete_tag("keep")  # the last holder: its deletion removes the file (as Java's TagDeletion)
    assert not path.exists()


@pytest.mark.parametrize("decoupled", [False, True])
def test_expiry_deletes_statistics_only_expired_snapshots_named(catalog: Catalog, decoupled: bool) -> None:
    """Also when a long-lived changelog keeps copies of the expired snapshots (Java's
    SnapshotDeletion deletes the file then too; nothing reads a changelog's statistics)."""
    t = _table(catalog, **({"changelog.num-retained.min": "10", "changelog.num-retained.max": "10"}
                           if decoupled else {}))
    name = analyze_as_java(t)
    t.update_schema().add_column("extra", pa.int32()).commit()
    t = catalog.get_table("db.t")
    t.write_arrow(_rows(range(3)).append_column("extra", pa.nulls(3, pa.int32())))
    path = t.store.paths.statistics_file(name)
    dry = t.expire_snapshots(retain_min=1, retain_max=1, dry_run=True)
    assert dry.deleted_statistics_files == [path] and Path(path).exists()
    result = t.expire_snapshots(retain_min=1, retain_max=1)
    assert result.deleted_statistics_files == [path] and bool(result.long_lived_changelogs) == decoupled
    assert not Path(path).exists() and t.to_arrow().num_rows == 10
    if decoupled:  # a copy still names the deleted file: harmless, as for Java
        assert [c.statistics for c in map(t.store.changelog_manager().changelog,
                                          t.store.changelog_manager().ids())][1] == name
        assert str(path) not in t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths


def test_overwrites_of_nothing(catalog: Catalog) -> None:
    """A static overwrite always commits (Java's ``tryOverwrite``): an empty OVERWRITE snapshot
    when it replaces and adds nothing. A dynamic one of no rows commits nothing."""
    t = _table(catalog)
    sid = t.write_arrow(SCHEMA.empty_table(), overwrite={"dt": "none"})
    snap = t.snapshot(sid)  # type: ignore[arg-type]
    assert (snap.commit_kind, snap.delta_record_count, snap.total_record_count) == (CommitKind.OVERWRITE, 0, 10)
    assert t.store.manifest_io().read_manifest_list(snap.delta_manifest_list) == []
    assert t.write_arrow(SCHEMA.empty_table(), overwrite=True) is None  # dynamic-partition-overwrite=true
    assert t.snapshot_manager.latest_id() == sid and t.to_arrow().num_rows == 10

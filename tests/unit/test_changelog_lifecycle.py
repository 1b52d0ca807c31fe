"""Decoupled changelog lifecycle: changelogs retained longer than snapshots (issue 4).

With ``changelog.num-retained.*`` / ``changelog.time-retained`` above the snapshot settings, snapshot
expiration keeps what a stream needs and moves the snapshot JSON to ``changelog/changelog-<id>``;
`expire_changelogs` later removes them per the changelog retention.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError, SnapshotNotFoundError
from lake_assets.ops.expire import expire_changelogs
from lake_assets.ops.orphans import referenced_files
from lake_assets.ops.stream import iter_stream
from lake_assets.spec.manifest import FileKind

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


def _table(catalog: Catalog, producer: str, name: str, **extra: str):
    options = {
        "bucket": "2", "rowkind.field": "op", "changelog-producer": producer, "write-only": "true",
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
        "changelog.num-retained.max": "8", **extra,
    }
    return catalog.create_table(name, SCHEMA, primary_keys=["k"], options=options)


def _commits(t, n: int, seed: int, producer: str) -> None:
    rng = np.random.default_rng(seed)
    for i in range(n):
        ks = rng.integers(0, 30, size=20)
        ops = rng.choice(["+I", "+U", "-D"], size=20, p=[0.5, 0.3, 0.2])
        t.write_arrow(pa.table({"k": ks, "v": np.full(20, i), "op": ops}, schema=SCHEMA))
        if producer == "lookup":
            t.compact()
        elif producer == "full-compaction" or (producer == "none" and i % 3 == 2):
            # compaction deletes writer-added files: the changelog of producer none must keep them
            t.compact(full=True)


def _changes(t, start: int) -> list[tuple]:
    return sorted((r["k"], r["v"], r["_row_kind"]) for r in t.read_changes(start).to_pylist())


def _assert_nothing_dangles(t) -> None:
    """Every retained snapshot reads, and every long-lived changelog names only existing files."""
    fio = t.file_io
    for snap in t.snapshots():
        t.to_arrow(snapshot_id=snap.id)
    scan = t.store.file_store_scan()
    changelogs = t.store.changelog_manager()
    producer = t.schema.core_options.changelog_producer
    for cid in changelogs.ids():
        snap = changelogs.changelog(cid)
        entries = scan.changelog_entries(snap) if producer != "none" else scan.delta_entries(snap)
        for e in entries:
            if e.kind == FileKind.ADD and (producer != "none" or e.file.file_source in (None, 0)):
                path = t.store.data_file_path(e.partition, e.bucket, e.file)
                assert fio.exists(path), f"changelog-{cid} names missing {path}"


@pytest.mark.parametrize("producer", ["none", "input", "lookup", "full-compaction"])
def test_changelog_outlives_snapshots_and_streams_read_it(catalog, producer):
    # The compactions in between are dedicated compactions, whose commits expire per the table's
    # retention: the snapshot retention is set after them, so the explicit expiry below does it all.
    name = f"db.cl_{producer.replace('-', '_')}"
    t = _table(catalog, producer, name, **{"snapshot.num-retained.max": "1000"})
    _commits(t, 10, seed=7, producer=producer)
    catalog.alter_table_options(name, set={"snapshot.num-retained.max": "3"})
    t = catalog.get_table(name)
    latest = t.latest_snapshot().id
    before = {start: _changes(t, start) for start in range(0, latest - 1)}
    model = t.to_arrow().sort_by("k")

    result = t.expire_snapshots(older_than=None)
    snapshots = [s.id for s in t.snapshots()]
    assert snapshots == [latest - 2, latest - 1, latest]
    long_lived = t.store.changelog_manager().ids()
    # changelog.num-retained.max = 8: the newest 8 ids keep their changes
    assert long_lived == list(range(latest - 7, latest - 2))
    assert result.long_lived_changelogs == list(range(1, latest - 2))
    assert result.expired_changelogs == list(range(1, latest - 7))
    assert t.to_arrow().sort_by("k").equals(model)
    for start in range(latest - 8, latest - 1):
        assert _changes(t, start) == before[start], f"changes after {start}"
    with pytest.raises(SnapshotNotFoundError, match="expired"):
        t.read_changes(latest - 9)
    _assert_nothing_dangles(t)
    # nothing a retained changelog needs counts as an orphan
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_stream_resumes_from_a_long_lived_changelog(catalog):
    t = _table(catalog, "input", "db.resume")
    enum = t.stream(mode="latest", consumer_id="slow")
    reader = t.change_reader()
    seen: dict[int, int] = {}

    def drain() -> None:
        for _, changes in iter_stream(enum, reader):
            for r in changes.to_pylist():
                if r["_row_kind"] in ("+I", "+U"):
                    seen[r["k"]] = r["v"]
                else:
                    seen.pop(r["k"], None)

    _commits(t, 2, seed=1, producer="input")
    drain()
    _commits(t, 6, seed=2, producer="input")
    # The consumer protects its snapshots from snapshot expiry; without a consumer they would be
    # gone. Drop the consumer file to show the long-lived changelog alone keeps the changes.
    position = enum.position
    t.file_io.delete(t.paths.consumer_file("slow"))
    t.expire_snapshots()
    assert t.snapshot_manager.earliest_id() > position
    assert position in t.store.changelog_manager().ids()
    enum = t.stream(position=position)
    drain()
    assert seen == {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}


def test_changelog_expiry_honours_consumers_tags_and_limits(catalog):
    t = _table(catalog, "input", "db.protect", **{"changelog.num-retained.max": "100"})
    _commits(t, 12, seed=3, producer="input")
    t.create_tag("keep", 2)
    t.expire_snapshots()
    ids = t.store.changelog_manager().ids()
    assert ids and ids[0] == 1
    t.store.consumer_manager().record("reader", 4)
    result = expire_changelogs(t.store, retain_max=1, limit=2)
    assert result.expired_changelogs == [1, 2]  # the limit
    result = expire_changelogs(t.store, retain_max=1)
    assert result.expired_changelogs == [3]  # the consumer still needs 4
    assert t.store.changelog_manager().ids()[0] == 4
    assert t.to_arrow(tag="keep").num_rows > 0  # the tag's files survive
    _assert_nothing_dangles(t)


def test_dry_run_changes_nothing(catalog):
    t = _table(catalog, "input", "db.dry")
    _commits(t, 10, seed=4, producer="input")
    files = sorted(s.path for s in t.file_io.walk_files(t.paths.root))
    result = t.expire_snapshots(dry_run=True)
    assert result.expired_snapshots and result.long_lived_changelogs
    assert sorted(s.path for s in t.file_io.walk_files(t.paths.root)) == files


def test_not_decoupled_deletes_changelog_with_snapshots(catalog):
    t = catalog.create_table(
        "db.coupled", SCHEMA, primary_keys=["k"],
        options={"bucket": "1", "rowkind.field": "op", "changelog-producer": "input",
                 "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                 "write-only": "true"},  # its writers' commits expire nothing: the explicit expiry does
    )
    _commits(t, 5, seed=5, producer="input")
    result = t.expire_snapshots()
    assert result.deleted_changelog_files and not result.long_lived_changelogs
    assert t.store.changelog_manager().ids() == []
    assert referenced_files(t.store)


def test_changelog_expires_with_its_own_time_retention(catalog):
    t = _table(catalog, "input", "db.time", **{"changelog.num-retained.max": "1000",
                                                 "changelog.time-retained": "1 h"})
    _commits(t, 6, seed=6, producer="input")
    t.expire_snapshots()
    assert t.store.changelog_manager().ids() == [1, 2, 3]  # younger than an hour: kept
    later = t.store.changelog_manager().changelog(3).time_millis + 1
    result = expire_changelogs(t.store, older_than_ms=later)
    assert result.expired_changelogs == [1, 2, 3]
    assert t.store.changelog_manager().ids() == []
    assert not any(t.file_io.exists(p) for p in result.deleted_changelog_files)


def test_after_changelog_expiry_producer_none_frees_compacted_input(catalog):
    t = _table(catalog, "none", "db.none_free")
    _commits(t, 10, seed=8, producer="none")
    t.expire_snapshots()
    kept_inputs = [p for p in referenced_files(t.store) if "/bucket-" in p]
    result = expire_changelogs(t.store, retain_max=1)
    assert result.expired_changelogs and result.deleted_data_files
    assert not any(t.file_io.exists(p) for p in result.deleted_data_files)
    assert set(result.deleted_data_files) <= set(kept_inputs)
    _assert_nothing_dangles(t)
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


@pytest.mark.parametrize(
    ("options", "message"),
    [({"changelog.num-retained.min": "0"}, "changelog.num-retained.min"),
     ({"changelog.num-retained.min": "5", "changelog.num-retained.max": "2"}, "changelog.num-retained.max")],
)
def test_bad_changelog_retention_is_rejected(catalog, options, message):
    with pytest.raises(OptionError, match=message):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


def test_decoupled_rule():
    from lake_assets.options import CoreOptions

    assert not CoreOptions({}).changelog_decoupled()
    # snapshot.num-retained.max is unbounded by default: a changelog max only decouples above a set one
    assert not CoreOptions({"changelog.num-retained.max": "20"}).changelog_decoupled()
    assert CoreOptions({"snapshot.num-retained.max": "10", "changelog.num-retained.max": "20"}).changelog_decoupled()
    assert CoreOptions({"changelog.time-retained": "2 h"}).changelog_decoupled()
    assert not CoreOptions({"changelog.time-retained": "30 min"}).changelog_decoupled()
    assert CoreOptions({"changelog.num-retained.min": "5"}).changelog_decoupled(retain_min=1)

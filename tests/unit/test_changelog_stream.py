"""Changelog producers, incremental reads and streaming reads with saved positions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, SnapshotNotFoundError
from lake_assets.errors import InvalidArgumentError
from lake_assets.ops.stream import iter_stream


def _table(catalog: Catalog, producer: str, name: str = "db.t"):
    return catalog.create_table(
        name, pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]), primary_keys=["k"],
        options={"bucket": "2", "rowkind.field": "op", "changelog-producer": producer, "write-only": "true"},
    )


def _apply(state: dict, changes: pa.Table) -> None:
    for r in changes.to_pylist():
        if r["_row_kind"] in ("+I", "+U"):
            state[r["k"]] = r["v"]
        else:
            state.pop(r["k"], None)


def _maintain(t, producer: str) -> None:
    if producer == "lookup":
        t.compact()
    elif producer == "full-compaction":
        t.compact(full=True)


@pytest.mark.parametrize("producer", ["none", "input", "lookup", "full-compaction"])
def test_changelog_replayed_onto_previous_state_gives_new_state(catalog, producer):
    t = _table(catalog, producer)
    rng = np.random.default_rng(hash(producer) % 2**32)
    enum = t.stream(mode="latest", consumer_id="replay")
    reader = t.change_reader()
    replayed: dict[int, int] = {}
    for i in range(8):
        ks = rng.integers(0, 40, size=25)
        ops = rng.choice(["+I", "+U", "-D"], size=25, p=[0.5, 0.3, 0.2])
        t.write_arrow(pa.table({"k": ks, "v": np.full(25, i), "op": ops}, schema=t.arrow_schema))
        _maintain(t, producer)
        for _, changes in iter_stream(enum, reader):
            _apply(replayed, changes)
        truth = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
        assert replayed == truth, f"after commit {i}"


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_producers_record_changelog_manifests(catalog, producer):
    t = _table(catalog, producer, f"db.p_{producer.replace('-', '_')}")
    t.write_arrow(pa.table({"k": [1, 2], "v": [1, 1], "op": ["+I", "+I"]}, schema=t.arrow_schema))
    _maintain(t, producer)
    snaps = [s for s in t.snapshots() if s.changelog_manifest_list]
    assert snaps and all(s.changelog_record_count for s in snaps)
    # changelog files live beside data files and are never visible to batch reads
    assert t.to_arrow().num_rows == 2


def test_lookup_changelog_rows(catalog):
    t = _table(catalog, "lookup", "db.lk")
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": [1, 1, 1], "op": ["+I"] * 3}, schema=t.arrow_schema))
    t.compact()
    start = t.latest_snapshot().id
    t.write_arrow(pa.table({"k": [1, 2, 4], "v": [2, 2, 2], "op": ["+U", "-D", "+I"]}, schema=t.arrow_schema))
    t.compact()
    got = sorted((r["k"], r["_row_kind"], r["v"]) for r in t.read_changes(start).to_pylist())
    assert got == [(1, "+U", 2), (1, "-U", 1), (2, "-D", 1), (4, "+I", 2)]


def test_stream_resumes_from_consumer_after_restart_without_loss_or_repeat(catalog):
    t = _table(catalog, "none", "db.resume")
    seen: list[int] = []

    def drain(enum) -> None:
        for _, changes in iter_stream(enum, t.change_reader()):
            seen.extend(changes.column("v").to_pylist())

    for i in range(3):
        t.write_arrow(pa.table({"k": [i], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    drain(t.stream(mode="latest-full", consumer_id="job"))
    for i in range(3, 6):
        t.write_arrow(pa.table({"k": [i], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    # "restart": a new enumerator with the same consumer id continues where the last one stopped
    drain(t.stream(mode="latest-full", consumer_id="job"))
    assert sorted(seen) == list(range(6)) and len(seen) == 6
    assert t.store.consumer_manager().get("job").next_snapshot == 7


def test_stream_start_modes_and_compact_snapshots_skipped(catalog):
    t = _table(catalog, "none", "db.modes")
    for i in range(3):
        t.write_arrow(pa.table({"k": [i, 100], "v": [i, i], "op": ["+I", "+I"]}, schema=t.arrow_schema))
    t.compact(full=True)
    reader = t.change_reader()

    def rows(enum):
        return sorted((r["k"], r["_row_kind"]) for _, c in iter_stream(enum, reader) for r in c.to_pylist())

    assert rows(t.stream(mode="latest")) == []
    assert rows(t.stream(mode="from-snapshot", snapshot_id=2)) == [(1, "+I"), (2, "+I"), (100, "+I"), (100, "+I")]
    full = rows(t.stream(mode="latest-full"))
    assert full == [(0, "+I"), (1, "+I"), (2, "+I"), (100, "+I")]
    ts = t.snapshot(3).time_millis
    assert (2, "+I") in rows(t.stream(mode="from-timestamp", timestamp=ts))


def test_stream_reports_expired_position(catalog):
    from datetime import datetime, timedelta

    t = _table(catalog, "none", "db.exp")
    enum = t.stream(mode="from-snapshot", snapshot_id=1)
    for i in range(5):
        t.write_arrow(pa.table({"k": [i], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    t.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    with pytest.raises(SnapshotNotFoundError, match="expired before this stream read it"):
        enum.poll()


def test_read_changes_between_tags_and_delta_source(catalog):
    t = _table(catalog, "input", "db.tags")
    t.write_arrow(pa.table({"k": [1], "v": [1], "op": ["+I"]}, schema=t.arrow_schema))
    t.create_tag("a")
    t.write_arrow(pa.table({"k": [1, 1], "v": [2, 3], "op": ["+U", "+U"]}, schema=t.arrow_schema))
    t.create_tag("b")
    a, b = t.store.tag_manager().get("a").snapshot.id, t.store.tag_manager().get("b").snapshot.id
    # the input changelog keeps both updates; the data delta holds the merged result only
    assert [r["v"] for r in t.read_changes(a, b).to_pylist()] == [2, 3]
    assert [r["v"] for r in t.read_changes(a, b, source="delta").to_pylist()] == [3]
    # between two tags Paimon diffs the tags' files: the net change of the key, whatever the producer
    assert [(r["v"], r["_row_kind"]) for r in t.read_changes("a", "b").to_pylist()] == [(3, "+U")]
    with pytest.raises(InvalidArgumentError, match="source='delta'"):
        t.read_changes("a", "b", source="delta")


def test_lookup_changelog_with_composite_key(catalog):
    t = catalog.create_table(
        "db.ck", pa.schema([("a", pa.string()), ("b", pa.int32()), ("v", pa.int64())]), primary_keys=["a", "b"],
        options={"bucket": "2", "changelog-producer": "lookup", "write-only": "true"},
    )
    t.write_arrow(pa.table({"a": ["x", "x", "y"], "b": [1, 2, 1], "v": [1, 1, 1]}, schema=t.arrow_schema))
    t.compact()
    start = t.latest_snapshot().id
    t.write_arrow(pa.table({"a": ["x", "z"], "b": [2, 9], "v": [2, 2]}, schema=t.arrow_schema))
    t.compact()
    got = sorted((r["a"], r["b"], r["_row_kind"], r["v"]) for r in t.read_changes(start).to_pylist())
    assert got == [("x", 2, "+U", 2), ("x", 2, "-U", 1), ("z", 9, "+I", 2)]

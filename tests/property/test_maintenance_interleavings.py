"""Random interleavings of writes, compactions, expirations, tags and orphan cleanup.

After every step each retained snapshot and tag reads back the model state it had when it was
committed, and no retained snapshot or tag references a missing file.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog

WRITE = st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, 20), st.sampled_from(["+I", "-D"]),
                                                       st.integers(0, 99)), min_size=1, max_size=15))
STEP = st.one_of(
    WRITE,
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 4)),
    st.tuples(st.just("tag"), st.none()),
    st.tuples(st.just("orphans"), st.none()),
)
FUTURE = datetime.now() + timedelta(days=1)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=3, max_size=18))
def test_every_retained_snapshot_and_tag_reads_its_state(steps):
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table(
            "db.t", pa.schema([("k", pa.int64()), ("op", pa.string()), ("v", pa.int64())]), primary_keys=["k"],
            options={"bucket": "2", "rowkind.field": "op", "write-only": "true",
                     "num-sorted-run.compaction-trigger": "3"},
        )
        model: dict[int, int] = {}
        states: dict[int, dict[int, int]] = {}
        tags: dict[str, dict[int, int]] = {}
        for i, (kind, arg) in enumerate(steps):
            if kind == "write":
                t.write_arrow(pa.table({"k": [a[0] for a in arg], "op": [a[1] for a in arg],
                                        "v": [a[2] for a in arg]}, schema=t.arrow_schema))
                for k, op, v in arg:
                    if op == "-D":
                        model.pop(k, None)
                    else:
                        model[k] = v
            elif kind == "compact":
                t.compact(full=arg)
            elif kind == "expire":
                t.expire_snapshots(retain_min=arg, older_than=FUTURE)
            elif kind == "tag" and t.latest_snapshot() is not None:
                name = f"t{i}"
                t.create_tag(name)
                tags[name] = states[t.latest_snapshot().id]
            elif kind == "orphans":
                t.remove_orphan_files(older_than=timedelta(0), dry_run=False)
            latest = t.latest_snapshot()
            if latest is not None:
                states.setdefault(latest.id, dict(model))
            for snap in t.snapshots():
                got = {r["k"]: r["v"] for r in t.to_arrow(snapshot_id=snap.id).to_pylist()}
                assert got == states[snap.id], f"snapshot {snap.id} after step {i} {kind}"
            for name, state in tags.items():
                assert {r["k"]: r["v"] for r in t.to_arrow(tag=name).to_pylist()} == state
            # no retained snapshot or tag references a missing file
            scan = t.store.file_store_scan()
            for snap in [*t.snapshots(), *t.tags().values()]:
                for e in scan.live_entries(snap):
                    assert t.file_io.exists(t.store.data_file_path(e.partition, e.bucket, e.file)), (snap.id, i, kind)


CHANGELOG_STEP = st.one_of(
    WRITE, WRITE, WRITE,  # enough snapshots for expiry to have something to move
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("expire_changelogs"), st.integers(1, 8)),
    st.tuples(st.just("tag"), st.none()),
    st.tuples(st.just("orphans"), st.none()),
)


def _changes_of(t, sid: int) -> list[tuple]:
    return sorted((r["k"], r["v"], r["_row_kind"]) for r in t.read_changes(sid - 1, sid).to_pylist())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(producer=st.sampled_from(["none", "input", "lookup"]), steps=st.lists(CHANGELOG_STEP, min_size=6, max_size=16))
def test_long_lived_changelogs_read_what_their_snapshots_read(producer, steps):
    """Decoupled changelog lifecycle: whatever expires, every id still held as a snapshot or a
    long-lived changelog reads the same changes as when it was committed, and names no missing file."""
    from lake_assets.ops.expire import expire_changelogs
    from lake_assets.spec.manifest import FileKind

    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table(
            "db.t", pa.schema([("k", pa.int64()), ("op", pa.string()), ("v", pa.int64())]), primary_keys=["k"],
            options={"bucket": "2", "rowkind.field": "op", "write-only": "true", "changelog-producer": producer,
                     "num-sorted-run.compaction-trigger": "3", "changelog.num-retained.min": "6"},
        )
        recorded: dict[int, list[tuple]] = {}
        changelogs = t.store.changelog_manager()
        for i, (kind, arg) in enumerate(steps):
            if kind == "write":
                t.write_arrow(pa.table({"k": [a[0] for a in arg], "op": [a[1] for a in arg],
                                        "v": [a[2] for a in arg]}, schema=t.arrow_schema))
            elif kind == "compact":
                t.compact(full=arg)
            elif kind == "expire":
                t.expire_snapshots(retain_min=arg, older_than=FUTURE)
            elif kind == "expire_changelogs":
                expire_changelogs(t.store, retain_min=1, retain_max=arg, older_than_ms=0)
            elif kind == "tag" and t.latest_snapshot() is not None:
                t.create_tag(f"t{i}")
            elif kind == "orphans":
                t.remove_orphan_files(older_than=timedelta(0), dry_run=False)
            held = [s.id for s in t.snapshots()] + changelogs.ids()
            for sid in held:
                if sid not in recorded:
                    recorded[sid] = _changes_of(t, sid)
                else:
                    assert _changes_of(t, sid) == recorded[sid], f"changes of {sid} after step {i} {kind}"
            scan = t.store.file_store_scan()
            for cid in changelogs.ids():
                snap = changelogs.changelog(cid)
                entries = scan.changelog_entries(snap) if producer != "none" else (
                    [] if snap.commit_kind.name != "APPEND" else scan.delta_entries(snap))
                for e in entries:
                    if e.kind == FileKind.ADD:
                        path = t.store.data_file_path(e.partition, e.bucket, e.file)
                        assert t.file_io.exists(path), (cid, i, kind)
            for snap in t.snapshots():
                for e in scan.live_entries(snap):
                    assert t.file_io.exists(t.store.data_file_path(e.partition, e.bucket, e.file)), (snap.id, i, kind)

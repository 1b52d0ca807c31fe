"""Random interleavings of writes, compactions, expirations, tags and orphan cleanup.

After every step each retained snapshot and tag reads back the model state it had when it was
committed, and no retained snapshot or tag references a missing file.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.history import FUTURE, ModelledHistory, kv_table, write_rows, write_step

WRITE = write_step(20)
STEP = st.one_of(
    WRITE,
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 4)),
    st.tuples(st.just("tag"), st.none()),
    st.tuples(st.just("orphans"), st.none()),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=3, max_size=18))
def test_every_retained_snapshot_and_tag_reads_its_state(steps):
    with kv_table({"bucket": "2", "num-sorted-run.compaction-trigger": "3"}) as t:
        history = ModelledHistory(t, expire_retain_max=False)
        for i, (kind, arg) in enumerate(steps):
            if kind == "orphans":
                t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
            else:
                history.apply(i, kind, arg)
            history.record_and_check(i, kind)
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

    with kv_table({"bucket": "2", "changelog-producer": producer, "num-sorted-run.compaction-trigger": "3",
                   "changelog.num-retained.min": "6"}) as t:
        recorded: dict[int, list[tuple]] = {}
        changelogs = t.store.changelog_manager()
        for i, (kind, arg) in enumerate(steps):
            if kind == "write":
                write_rows(t, arg)
            elif kind == "compact":
                t.compact(full=arg)
            elif kind == "expire":
                t.expire_snapshots(retain_min=arg, older_than=FUTURE)
            elif kind == "expire_changelogs":
                expire_changelogs(t.store, retain_min=1, retain_max=arg, older_than_ms=0)
            elif kind == "tag" and t.latest_snapshot() is not None:
                t.create_tag(f"t{i}")
            elif kind == "orphans":
                t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
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

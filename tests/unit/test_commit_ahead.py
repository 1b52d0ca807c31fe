"""The COMPACT snapshot of a writer's commit, written while its APPEND snapshot is put (issue 14):
used only on top of that very snapshot, and never left behind when it is not used."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import commit_ahead
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(tmp_path: Path, name: str = "t"):
    cat = Catalog(str(tmp_path / "wh"))
    if name == "t":
        cat.create_database("db")
        cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    return cat.get_table("db.t")


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _state(t) -> dict[int, str]:
    got = t.to_arrow().to_pylist()
    state = {r["k"]: r["v"] for r in got}
    assert len(state) == len(got), "a key appears twice"
    return state


def _unreferenced_metadata(t, dirs: tuple[str, ...] = ("/manifest/", "/index/")) -> list[str]:
    """Manifests, lists (and index files) no snapshot references (what a commit must not leave)."""
    paths = t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths
    return [p for p in paths if any(d in p for d in dirs)]


def _role() -> str:
    """The calling thread's name without a kept thread's number (``lake-commit-ahead-3``)."""
    name = threading.current_thread().name
    return commit_ahead.AHEAD_THREAD_NAME if name.startswith(commit_ahead.AHEAD_THREAD_NAME) else name


@pytest.fixture
def ahead_threads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, CommitKind]]:
    """(thread name, kind) of every snapshot whose files the ahead writer wrote (with 2 usable
    CPUs, whatever the machine has: one CPU writes them on the calling thread)."""
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")
    seen: list[tuple[str, CommitKind]] = []
    real = commit_ahead.snapshot_record

    def spy(store, latest, kind, *args, **kwargs):
        seen.append((_role(), kind))
        return real(store, latest, kind, *args, **kwargs)
    monkeypatch.setattr(commit_ahead, "snapshot_record", spy)
    return seen


def test_the_compact_snapshot_is_written_while_the_append_is_put(tmp_path, ahead_threads) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    t.write_arrow(_rows(range(50, 150), "b"))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT]
    assert ahead_threads == [("lake-commit-ahead", CommitKind.COMPACT)] * 2
    snaps = list(t.snapshots())
    # the COMPACT snapshot follows its APPEND: same identifier, the APPEND's lists under its base
    assert snaps[3].commit_identifier == snaps[2].commit_identifier
    assert snaps[3].total_record_count == snaps[2].total_record_count + snaps[3].delta_record_count
    assert _state(t) == {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}
    for s in snaps:
        t.to_arrow(snapshot_id=s.id)
    assert _unreferenced_metadata(t) == []


def test_an_append_that_loses_the_race_drops_the_files_written_ahead(tmp_path, ahead_threads) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    other = _table(tmp_path, "other")
    raced = []

    def other_commits_first(step: str) -> None:
        if step == "commit.before_snapshot" and not raced:
            raced.append(True)  # another writer takes the APPEND's snapshot id
            w = other.new_writer("other", write_only=True)
            w.write_arrow(_rows(range(200, 210), "o"))
            other.new_committer("other").commit(w.prepare_commit(), 1)

    t.fault_hook = other_commits_first
    t.write_arrow(_rows(range(50, 150), "b"))
    t.fault_hook = None
    kinds = [(s.commit_user == "other", s.commit_kind) for s in t.snapshots()][2:]
    assert kinds == [(True, CommitKind.APPEND), (False, CommitKind.APPEND), (False, CommitKind.COMPACT)]
    # written twice ahead: on top of the APPEND that lost, then of the one that landed
    assert ahead_threads == [("lake-commit-ahead", CommitKind.COMPACT)] * 3
    expected = {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}
    assert _state(t) == expected  # the other writer's rows sit in level 0, which a DV read skips
    assert _unreferenced_metadata(t) == []
    t.compact(full=True)
    assert _state(t) == {**expected, **{k: f"o{k}" for k in range(200, 210)}}


def test_a_failure_between_the_two_snapshots_keeps_the_append_and_leaves_nothing(tmp_path, ahead_threads) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    before = {s.id for s in t.snapshots()}
    ahead_threads.clear()
    manifests_seen = []

    def fail_second_manifests(step: str) -> None:
        if step == "commit.after_manifests":
            manifests_seen.append(step)
            if len(manifests_seen) == 2:  # the COMPACT snapshot's, replayed before its put
                raise OSError("storage unavailable")

    t.fault_hook = fail_second_manifests
    sid = t.write_arrow(_rows(range(50, 150), "b"))
    t.fault_hook = None
    new = [s for s in t.snapshots() if s.id not in before]
    assert [s.commit_kind for s in new] == [CommitKind.APPEND] and sid == new[0].id
    assert ahead_threads == [("lake-commit-ahead", CommitKind.COMPACT)]
    assert _unreferenced_metadata(t) == []  # the COMPACT's files written ahead are gone
    # the landed rows sit in level 0 (a DV read skips it) until a compaction takes them up
    assert _state(t) == {k: f"a{k}" for k in range(100)}
    t.compact()
    assert _state(t) == {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}


def test_a_commit_unknown_append_leaves_no_compact_files(tmp_path, ahead_threads) -> None:
    from lake_assets.errors import CommitStateUnknownError

    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    w = t.new_writer("w")
    w.write_arrow(_rows(range(50, 150), "b"))
    messages = w.prepare_commit()
    ahead_threads.clear()

    def unknown(step: str) -> None:
        if step == "commit.before_snapshot":
            raise CommitStateUnknownError("the put of the snapshot was not answered")

    t.fault_hook = unknown
    with pytest.raises(CommitStateUnknownError):
        t.new_committer("w").commit(messages, 7)
    t.fault_hook = None
    assert ahead_threads == [("lake-commit-ahead", CommitKind.COMPACT)]
    # nothing of the COMPACT snapshot left (never put); the compaction's own index files stay:
    # a snapshot of an unknown outcome may reference them
    assert _unreferenced_metadata(t, ("/manifest/",)) == []
    assert t.new_committer("w").commit(messages, 7) != []  # the retry lands both snapshots
    assert [s.commit_kind for s in t.snapshots()][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert _unreferenced_metadata(t) == []
    assert _state(t) == {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}


def test_one_usable_cpu_writes_the_compact_snapshot_on_the_calling_thread(
        tmp_path, ahead_threads, monkeypatch) -> None:
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "1")
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    t.write_arrow(_rows(range(50, 150), "b"))
    assert ahead_threads == []
    assert [s.commit_kind for s in t.snapshots()] == [CommitKind.APPEND, CommitKind.COMPACT] * 2
    assert _state(t) == {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}
    assert _unreferenced_metadata(t) == []


def _hint(t) -> int:
    return int((Path(t.store.paths.snapshot_dir) / "LATEST").read_text())


def test_the_compact_put_is_prepared_ahead_and_one_hint_covers_both(tmp_path, ahead_threads, monkeypatch) -> None:
    """The COMPACT snapshot's file is written and fsync'd on the helper thread (its put on the
    calling thread is a link), and only its LATEST hint is written: one fsync and one hint
    replace fewer on the commit's critical path."""
    from lake_assets.store.snapshot_manager import SnapshotManager

    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    calls: list[tuple[str, str, int]] = []
    for name in ("try_commit", "prepare_commit"):
        real = getattr(SnapshotManager, name)

        def spy(self, snapshot, real=real, name=name):
            calls.append((_role(), name, snapshot.id))
            return real(self, snapshot)
        monkeypatch.setattr(SnapshotManager, name, spy)
    hints: list[int] = []
    real_hint = SnapshotManager.write_latest_hint
    monkeypatch.setattr(SnapshotManager, "write_latest_hint",
                        lambda self, sid: (hints.append(sid), real_hint(self, sid))[1])
    sid = t.write_arrow(_rows(range(50, 150), "b"))
    # the two threads run side by side: the helper may prepare before or after the APPEND's put
    assert sorted(calls) == sorted(
        [("MainThread", "try_commit", sid - 1), ("lake-commit-ahead", "prepare_commit", sid)])
    assert hints == [sid] and _hint(t) == sid
    assert [s.commit_kind for s in t.snapshots()][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert sorted(p.name for p in Path(t.store.paths.snapshot_dir).iterdir()) == sorted(
        ["LATEST", *(f"snapshot-{i}" for i in range(1, sid + 1))])  # no temporary file left
    assert _state(t) == {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}


def test_the_append_hint_is_written_when_the_compact_does_not_land(tmp_path, ahead_threads) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    seen = []

    def fail_compact_replay(step: str) -> None:
        if step == "commit.after_manifests":
            seen.append(step)
            if len(seen) == 2:  # the COMPACT snapshot's, replayed before its put
                raise OSError("storage unavailable")

    t.fault_hook = fail_compact_replay
    sid = t.write_arrow(_rows(range(50, 150), "b"))
    t.fault_hook = None
    assert t.snapshots()[-1].commit_kind == CommitKind.APPEND and t.snapshots()[-1].id == sid
    assert _hint(t) == sid
    assert not [p for p in Path(t.store.paths.snapshot_dir).iterdir() if p.name.endswith(".tmp")]


def test_a_replaced_try_create_still_makes_the_compact_put(tmp_path, ahead_threads) -> None:
    """A FileIO whose try_create is replaced (fault injection) gets every snapshot put through it:
    the prepared put defers to it instead of linking a file it wrote itself."""
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    real = t.file_io.try_create
    puts: list[str] = []

    def recording(path: str, data: bytes) -> bool:
        puts.append(path.rsplit("/", 1)[-1])
        return real(path, data)

    t.file_io.try_create = recording  # type: ignore[method-assign]
    try:
        sid = t.write_arrow(_rows(range(50, 150), "b"))
    finally:
        del t.file_io.try_create
    assert puts == [f"snapshot-{sid - 1}", f"snapshot-{sid}"]
    assert ahead_threads == [("lake-commit-ahead", CommitKind.COMPACT)] * 2


def test_a_commit_between_the_two_puts_makes_the_compact_land_on_it(tmp_path, ahead_threads) -> None:
    """The COMPACT's put does not look at the latest snapshot first: when another commit took its
    id after the APPEND landed, its put-if-absent fails, the files written ahead go, and the
    COMPACT is checked and written again on top of the other commit."""
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    other = _table(tmp_path, "other")
    puts = []

    def other_commits_between(step: str) -> None:
        if step == "commit.before_snapshot":
            puts.append(step)
            if len(puts) == 2:  # the COMPACT's put: another writer takes its id first
                w = other.new_writer("other", write_only=True)
                w.write_arrow(_rows(range(200, 210), "o"))
                other.new_committer("other").commit(w.prepare_commit(), 1)

    t.fault_hook = other_commits_between
    sid = t.write_arrow(_rows(range(50, 150), "b"))
    t.fault_hook = None
    kinds = [(s.commit_user == "other", s.commit_kind) for s in t.snapshots()][2:]
    assert kinds == [(False, CommitKind.APPEND), (True, CommitKind.APPEND), (False, CommitKind.COMPACT)]
    assert sid == t.snapshots()[-1].id and _hint(t) == sid
    expected = {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}
    assert _state(t) == expected
    assert _unreferenced_metadata(t) == []
    assert not [p for p in Path(t.store.paths.snapshot_dir).iterdir() if p.name.endswith(".tmp")]
    t.compact(full=True)
    assert _state(t) == {**expected, **{k: f"o{k}" for k in range(200, 210)}}


def test_the_files_a_deletion_vector_round_writes(tmp_path, ahead_threads) -> None:
    """An upsert round of a deletion-vector table writes what Paimon's writer commits, no more:
    per bucket a level-0 file and the bucket's new index file; the APPEND snapshot (its manifest
    and two lists); the COMPACT snapshot (index manifest, manifest, two lists). No temporary file
    and no unreferenced manifest is left."""
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    root = Path(t.store.paths.root)
    before = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    sid = t.write_arrow(_rows(range(50, 150), "b"))
    after = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    new = sorted(after - before)
    kinds: dict[str, int] = {}
    for p in new:
        kind = re.match(r"(data|index-manifest|index|manifest-list|manifest|snapshot)-", p.rsplit("/", 1)[-1])
        assert kind is not None, p
        kinds[kind.group(1)] = kinds.get(kind.group(1), 0) + 1
    # two buckets touched: a level-0 file and an index file each; APPEND: a manifest and two
    # lists; COMPACT: an index manifest, a manifest and two lists; the two snapshots
    assert kinds == {"data": 2, "index": 2, "manifest": 2, "manifest-list": 4, "index-manifest": 1, "snapshot": 2}, new
    assert f"snapshot/snapshot-{sid}" in new and f"snapshot/snapshot-{sid - 1}" in new
    assert not [p for p in after if p.rsplit("/", 1)[-1].startswith(".")]  # no temporary file
    assert _unreferenced_metadata(t) == []


def test_an_append_with_hash_files_has_the_compact_index_manifest_follow_it(tmp_path, ahead_threads) -> None:
    """A dynamic-bucket writer's APPEND carries HASH index files: the COMPACT snapshot written
    ahead takes its index manifest from that APPEND (waiting for it), not from the snapshot
    before, so both kinds of index files are live after the commit."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "-1", "dynamic-bucket.target-row-num": "40", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(100), "a"))
    t.write_arrow(_rows(range(50, 150), "b"))
    snaps = list(t.snapshots())
    assert [s.commit_kind for s in snaps] == [CommitKind.APPEND, CommitKind.COMPACT] * 2
    assert ahead_threads == [("lake-commit-ahead", CommitKind.COMPACT)] * 2
    append_index = {e.file_name for e in t.store.index_entries(snaps[2].index_manifest)}
    compact_index = t.store.index_entries(snaps[3].index_manifest)
    assert {e.index_type for e in compact_index} == {"HASH", "DELETION_VECTORS"}
    # the APPEND's HASH files are the COMPACT's: it followed the APPEND's index manifest
    assert {e.file_name for e in compact_index if e.index_type == "HASH"} == {
        e.file_name for e in t.store.index_entries(snaps[2].index_manifest) if e.index_type == "HASH"}
    assert append_index - {e.file_name for e in compact_index} <= {
        e.file_name for e in t.store.index_entries(snaps[2].index_manifest) if e.index_type == "DELETION_VECTORS"}
    assert _state(t) == {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}
    assert _unreferenced_metadata(t) == []

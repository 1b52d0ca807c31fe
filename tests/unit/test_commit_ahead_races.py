"""The commit-ahead thread (`lake_assets.ops.commit_ahead`) against the committer, interleavings
forced with events (session 12, debt 3).

What the thread relies on and what it must never do:
- it starts once its base's files (manifests, lists, index manifest) are in storage, and reads
  nothing of the base's snapshot file, which does not exist until the put;
- what it wrote is deleted when it is not used - also when the committer drops it while it is
  still writing, and when the committer's wait for it is interrupted - and nothing else is: not a
  file of the snapshot the committer put, nor of a later run;
- a process that cannot start a thread still commits, the usual way.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import commit_ahead
from lake_assets.ops.commit_ahead import SnapshotAhead
from lake_assets.ops.kept_threads import forget_idle_kept_threads
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
WAIT_S = 30  # a bound on each wait for the other thread: a hang fails the test instead of blocking it


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")  # the ahead writer runs only with a second CPU


def _table(tmp_path: Path) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                            options={"bucket": "2", "deletion-vectors.enabled": "true"})


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _state(t: Any) -> dict[int, str]:
    return {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}


def _unreferenced_metadata(t: Any) -> list[str]:
    paths = t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths
    return [p for p in paths if "/manifest/" in p or "/index/" in p]


def _manifest_exists(t: Any, name: str) -> bool:
    return bool(t.store.file_io.exists(t.store.paths.manifest_file(name)))


EXPECTED = {**{k: f"a{k}" for k in range(50)}, **{k: f"b{k}" for k in range(50, 150)}}


def test_the_thread_starts_once_its_base_files_are_in_storage(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    seen: list[dict[str, bool]] = []
    real = commit_ahead.write_base_list

    def spy(store: Any, mio: Any, base: Any, written: Any) -> Any:
        # on the ahead thread, where it first reads its base (the APPEND snapshot handed over)
        seen.append({"thread": threading.current_thread().name.startswith(commit_ahead.AHEAD_THREAD_NAME),
                     "lists": all(_manifest_exists(t, n) for n in (base.base_manifest_list, base.delta_manifest_list)),
                     "index": base.index_manifest is None or _manifest_exists(t, base.index_manifest),
                     "snapshot": store.snapshot_manager.try_snapshot(base.id) is not None})
        return real(store, mio, base, written)

    monkeypatch.setattr(commit_ahead, "write_base_list", spy)
    t.write_arrow(_rows(range(50, 150), "b"))
    # its base's files are there; its snapshot may or may not be put yet (the thread runs during
    # the put), and the thread does not need it
    assert [{k: v for k, v in s.items() if k != "snapshot"} for s in seen] == [
        {"thread": True, "lists": True, "index": True}]
    assert [s.commit_kind for s in t.snapshots()][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert _state(t) == EXPECTED
    assert _unreferenced_metadata(t) == []


def test_a_run_dropped_while_writing_leaves_none_of_its_files(tmp_path: Path) -> None:
    """The committer drops the run (its APPEND lost, or failed) while the thread is between two
    files: the drop waits for it, then deletes both, and nothing the table references."""
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    store, mio = t.store, t.store.manifest_io()
    between, go_on = threading.Event(), threading.Event()

    def prepare(run: Any, base: Any, base_changes_index: bool) -> Any:
        run.written.append(mio.write_manifest_list([])[0])
        between.set()
        assert go_on.wait(WAIT_S)
        run.written.append(mio.write_manifest_list([])[0])
        raise OSError("the ahead thread's storage failed")  # whatever it ends with

    ahead = SnapshotAhead(store, mio, prepare)
    ahead.start(t.latest_snapshot(), base_changes_index=False)
    assert between.wait(WAIT_S)
    dropped = threading.Thread(target=ahead.discard)
    dropped.start()
    dropped.join(0.2)
    assert dropped.is_alive()  # the drop waits for the writer: it must not delete a file half written
    go_on.set()
    dropped.join(WAIT_S)
    assert not dropped.is_alive()
    assert _unreferenced_metadata(t) == []
    assert _state(t) == {k: f"a{k}" for k in range(100)}


def test_an_interrupted_wait_still_deletes_the_runs_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the committer waits for the thread (in its cleanup after a failed APPEND):
    the thread deletes its files itself once it wrote the last one."""
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    store, mio = t.store, t.store.manifest_io()
    writing, go_on, done = threading.Event(), threading.Event(), threading.Event()

    def prepare(run: Any, base: Any, base_changes_index: bool) -> Any:
        try:
            run.written.append(mio.write_manifest_list([])[0])
            writing.set()
            assert go_on.wait(WAIT_S)
            run.written.append(mio.write_manifest_list([])[0])
            return None
        finally:
            done.set()

    ahead = SnapshotAhead(store, mio, prepare)
    ahead.start(t.latest_snapshot(), base_changes_index=False)
    assert writing.wait(WAIT_S)
    run = ahead._run
    assert run is not None
    waits: list[Any] = []

    def interrupted_wait(self: Any) -> None:
        waits.append(self)
        raise KeyboardInterrupt  # as a signal arriving while the caller waits for the run's end

    monkeypatch.setattr(commit_ahead.AheadRun, "_wait_ended", interrupted_wait)
    with pytest.raises(KeyboardInterrupt):
        ahead.discard()
    monkeypatch.undo()
    assert waits == [run]
    go_on.set()
    assert done.wait(WAIT_S)
    assert run._ended.wait(WAIT_S)  # the run's own end: its deletions done
    assert _unreferenced_metadata(t) == []  # before: the two lists stayed behind
    ahead.discard()  # and a later cleanup has nothing left to do
    assert _state(t) == {k: f"a{k}" for k in range(100)}


def test_a_later_run_never_deletes_the_files_the_committer_took(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    w = t.new_writer("w")
    w.write_arrow(_rows(range(50, 150), "b"))
    messages = w.prepare_commit()
    kept: list[list[str]] = []
    real_take = SnapshotAhead.take

    def take(self: SnapshotAhead, latest: Any) -> Any:
        prepared = real_take(self, latest)
        if prepared is not None:
            kept.append(list(prepared.written))
            self.discard()  # a stray cleanup after the hand-over must not touch them
        return prepared

    SnapshotAhead.take = take  # type: ignore[method-assign]
    try:
        t.new_committer("w").commit(messages, 1)
    finally:
        SnapshotAhead.take = real_take  # type: ignore[method-assign]
    assert len(kept) == 1 and kept[0] and all(_manifest_exists(t, n) for n in kept[0])
    assert [s.commit_kind for s in t.snapshots()][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert _state(t) == EXPECTED
    for s in t.snapshots():
        t.to_arrow(snapshot_id=s.id)
    assert _unreferenced_metadata(t) == []


def test_the_appends_manifests_deleted_under_the_thread_after_it_lost_the_race(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The APPEND loses its snapshot id to another writer; the committer deletes that attempt's
    manifests while the thread, held back until then, has not read its base yet. Whatever the
    thread makes of it is dropped; the retried APPEND and its COMPACT land whole."""
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))
    other = Catalog(str(tmp_path / "wh")).get_table("db.t")
    attempt_deleted = threading.Event()
    runs: list[str] = []
    real_base_list = commit_ahead.write_base_list

    def held_back(store: Any, mio: Any, appended: Any, written: Any) -> Any:
        # where the thread first reads the APPEND snapshot handed to it
        if not runs:  # the first run: on top of the attempt that is about to lose
            assert attempt_deleted.wait(WAIT_S)
        runs.append(appended.uuid)
        return real_base_list(store, mio, appended, written)

    monkeypatch.setattr(commit_ahead, "write_base_list", held_back)
    from lake_assets.store.manifest_io import ManifestIO
    real_delete = ManifestIO.delete

    def delete(self: ManifestIO, names: Any) -> None:
        names = list(names)
        real_delete(self, names)
        if threading.current_thread() is threading.main_thread() and names:
            attempt_deleted.set()  # the lost attempt's manifests are gone

    monkeypatch.setattr(ManifestIO, "delete", delete)
    raced: list[bool] = []

    def other_commits_first(step: str) -> None:
        if step == "commit.before_snapshot" and not raced:
            raced.append(True)
            ow = other.new_writer("other", write_only=True)
            ow.write_arrow(_rows(range(200, 210), "o"))
            other.new_committer("other").commit(ow.prepare_commit(), 1)

    t.fault_hook = other_commits_first
    t.write_arrow(_rows(range(50, 150), "b"))
    t.fault_hook = None
    assert raced and len(runs) == 2 and runs[0] != runs[1]
    kinds = [(s.commit_user == "other", s.commit_kind) for s in t.snapshots()][2:]
    assert kinds == [(True, CommitKind.APPEND), (False, CommitKind.APPEND), (False, CommitKind.COMPACT)]
    assert _unreferenced_metadata(t) == []
    for s in t.snapshots():
        t.to_arrow(snapshot_id=s.id)
    t.compact(full=True)
    assert _state(t) == {**EXPECTED, **{k: f"o{k}" for k in range(200, 210)}}


def test_a_process_that_cannot_start_a_thread_still_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(100), "a"))

    real_start = threading.Thread.start

    def no_thread(self: threading.Thread) -> None:
        if self.name.startswith(commit_ahead.AHEAD_THREAD_NAME):  # the process's thread limit reached just then
            raise RuntimeError("can't start new thread")
        real_start(self)

    forget_idle_kept_threads()  # no thread kept from an earlier commit: this one must start one
    monkeypatch.setattr(commit_ahead.threading.Thread, "start", no_thread)
    t.write_arrow(_rows(range(50, 150), "b"))  # before: the APPEND failed, then its cleanup too
    monkeypatch.undo()
    assert [s.commit_kind for s in t.snapshots()][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert _state(t) == EXPECTED
    assert _unreferenced_metadata(t) == []

"""A writer used again after one of its commits failed (session 15 finding 1, `ops/writer_rounds.py`).

A compacting primary-key writer carries each round's files into the next round's compaction.
When a round's commit fails the committer deletes them: the writer must find that out and refuse
(`WriterStateLostError`, its current round's files deleted) instead of compacting missing files;
when only the round's inline compaction failed (the data landed) it reloads its buckets and goes
on. An unknown outcome retried with the same identifier leaves the writer usable. Writers that do
not compact (write-only, append tables) need nothing of their earlier rounds and go on; the
failed round's rows are absent until re-sent, and never there twice.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitConflictError, CommitStateUnknownError, LakeError, WriterStateLostError
from lake_assets.spec.manifest import FileKind
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(tmp_path: Path, *, pk: bool = True, dv: bool = False, **options: str) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    opts = {"bucket": "1", "commit.max-retries": "0", **options} if pk else {"commit.max-retries": "0", **options}
    if dv:
        opts["deletion-vectors.enabled"] = "true"
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"] if pk else [], options=opts)


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _state(t: Any) -> dict[int, str]:
    return {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}


def _racing_commit(t: Any) -> Callable[[str], None]:
    """A fault hook: another writer takes the next snapshot id just before this commit's put,
    which (``commit.max-retries`` = 0) then fails with `CommitConflictError`."""
    def hook(step: str) -> None:
        if step == "commit.before_snapshot" and t.fault_hook is hook:
            t.fault_hook = None
            other = t.new_writer("other", write_only=True)
            other.write_arrow(_rows(range(100, 103), "o"))
            t.new_committer("other").commit(other.prepare_commit(), 1)
    return hook


def _unreferenced_data(t: Any) -> list[str]:
    paths = t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths
    return [p for p in paths if "/bucket-" in p or "/index/" in p]


def _adds(t: Any, name: str) -> int:
    """How many APPEND snapshots added a data file of this name (twice would be rows written
    twice; a COMPACT re-adds the files it upgrades to another level)."""
    scan = t.store.file_store_scan()
    return sum(1 for s in t.snapshots() if s.commit_kind == CommitKind.APPEND for e in scan.delta_entries(s)
               if e.kind == FileKind.ADD and e.file.file_name == name)


@pytest.mark.parametrize("dv", [False, True], ids=["lsm", "deletion-vectors"])
def test_a_compacting_writer_refuses_after_its_round_was_rejected(tmp_path: Path, dv: bool) -> None:
    t = _table(tmp_path, dv=dv)
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    c.commit(w.prepare_commit(), 1)
    w.write_arrow(_rows(range(5, 15), "b"))
    w.request_compaction((), 0, full=True)  # the round carries its compaction outputs too
    failed = w.prepare_commit()
    assert any(m.compact_after for m in failed)
    t.fault_hook = _racing_commit(t)
    with pytest.raises(CommitConflictError):
        c.commit(failed, 2)
    before = _state(t)
    w.write_arrow(_rows(range(20, 25), "c"))
    w.request_compaction((), 0, full=True)  # before the fix: MissingDataFileError here
    with pytest.raises(WriterStateLostError, match=r"db\.t cannot continue.*write them again"):
        w.prepare_commit()
    with pytest.raises(LakeError, match="closed"):
        w.write_arrow(_rows(range(1), "x"))
    assert _state(t) == before and _unreferenced_data(t) == []  # nothing committed, nothing left
    # what the caller re-sends through a new writer lands once, in order
    w2 = t.new_writer("u2")
    w2.write_arrow(_rows(range(5, 15), "b"))
    w2.write_arrow(_rows(range(20, 25), "c"))
    t.new_committer("u2").commit(w2.prepare_commit(), 1)
    expected = {**{k: f"a{k}" for k in range(5)}, **{k: f"b{k}" for k in range(5, 15)},
                **{k: f"o{k}" for k in range(100, 103)}, **{k: f"c{k}" for k in range(20, 25)}}
    assert _state(t) == expected


@pytest.mark.parametrize("dv", [False, True], ids=["lsm", "deletion-vectors"])
def test_a_round_whose_data_landed_but_not_its_compaction_reloads_the_buckets(tmp_path: Path, dv: bool) -> None:
    t = _table(tmp_path, dv=dv)
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    c.commit(w.prepare_commit(), 1)
    puts: list[str] = []

    def fail_second_put(step: str) -> None:  # the APPEND lands, the COMPACT's put fails (proven not made)
        if step == "commit.before_snapshot":
            puts.append(step)
            if len(puts) == 2:
                raise OSError("storage refused the compaction's snapshot")

    w.write_arrow(_rows(range(5, 15), "b"))
    w.request_compaction((), 0, full=True)
    t.fault_hook = fail_second_put
    c.commit(w.prepare_commit(), 2)  # returns: the data landed, the compaction's outputs were deleted
    t.fault_hook = None
    assert len(puts) == 2 and t.snapshots()[-1].commit_kind.name == "APPEND"
    w.write_arrow(_rows(range(12, 20), "c"))
    w.request_compaction((), 0, full=True)  # before the fix: MissingDataFileError here
    c.commit(w.prepare_commit(), 3)
    assert t.snapshots()[-1].commit_kind.name == "COMPACT"
    assert _state(t) == {**{k: f"a{k}" for k in range(5)}, **{k: f"b{k}" for k in range(5, 12)},
                         **{k: f"c{k}" for k in range(12, 20)}}
    assert _unreferenced_data(t) == []


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
@pytest.mark.parametrize("dv", [False, True], ids=["lsm", "deletion-vectors"])
def test_an_unknown_outcome_retried_leaves_the_writer_usable(tmp_path: Path, landed: bool, dv: bool) -> None:
    t = _table(tmp_path, dv=dv)
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    c.commit(w.prepare_commit(), 1)
    sm = t.store.snapshot_manager
    real = sm.try_commit

    def lost_answer(snapshot: Any) -> bool:  # the put happened (or not); its answer is lost
        sm.try_commit = real
        if landed:
            real(snapshot)
        raise CommitStateUnknownError("the put's response was lost")

    w.write_arrow(_rows(range(5, 15), "b"))
    round2 = w.prepare_commit()
    sm.try_commit = lost_answer
    with pytest.raises(CommitStateUnknownError):
        c.commit(round2, 2)
    assert (c.commit(round2, 2) == []) == landed  # the retry finds it landed, or lands it
    w.write_arrow(_rows(range(12, 20), "c"))
    w.request_compaction((), 0, full=True)
    c.commit(w.prepare_commit(), 3)
    assert _state(t) == {**{k: f"a{k}" for k in range(5)}, **{k: f"b{k}" for k in range(5, 12)},
                         **{k: f"c{k}" for k in range(12, 20)}}
    assert all(_adds(t, f.file_name) == 1 for m in round2 for f in m.new_files)  # never added twice


def test_an_unknown_outcome_given_up_and_aborted_refuses_the_writer(tmp_path: Path) -> None:
    t = _table(tmp_path)
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    c.commit(w.prepare_commit(), 1)
    w.write_arrow(_rows(range(5, 15), "b"))
    round2 = w.prepare_commit()
    # the caller looked (no snapshot of identifier 2) and drops the round's files
    assert not c.is_committed(2)
    t.new_committer("u").abort(round2, 2)
    w.write_arrow(_rows(range(12, 20), "c"))
    with pytest.raises(WriterStateLostError):
        w.prepare_commit()
    assert _state(t) == {k: f"a{k}" for k in range(10)} and _unreferenced_data(t) == []


def test_rounds_prepared_ahead_of_their_commits_are_still_compacted(tmp_path: Path) -> None:
    """A committer behind the writer (rounds prepared before the earlier ones are committed) is
    no failure: the carried files exist and the commits land in order."""
    t = _table(tmp_path, dv=True)
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    r1 = w.prepare_commit()
    w.write_arrow(_rows(range(5, 15), "b"))
    w.request_compaction((), 0, full=True)
    r2 = w.prepare_commit()
    assert any(f.file_name in {n.file_name for m in r1 for n in m.new_files} for m in r2 for f in m.compact_before)
    c.commit(r1, 1)
    c.commit(r2, 2)
    w.write_arrow(_rows(range(14, 16), "c"))
    c.commit(w.prepare_commit(), 3)
    assert _state(t) == {**{k: f"a{k}" for k in range(5)}, **{k: f"b{k}" for k in range(5, 14)},
                         **{k: f"c{k}" for k in range(14, 16)}}


@pytest.mark.parametrize("pk", [True, False], ids=["write-only-primary-key", "append"])
def test_a_writer_without_inline_compaction_goes_on_after_a_rejected_round(tmp_path: Path, pk: bool) -> None:
    t = _table(tmp_path, pk=pk, **({"write-only": "true"} if pk else {}))
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    c.commit(w.prepare_commit(), 1)
    w.write_arrow(_rows(range(10, 20), "b"))
    t.fault_hook = _racing_commit(t)
    with pytest.raises(CommitConflictError):
        c.commit(w.prepare_commit(), 2)
    # the rejected round's rows are absent, re-sent they land once, and the writer goes on
    w.write_arrow(_rows(range(10, 20), "b"))
    w.write_arrow(_rows(range(20, 25), "c"))
    c.commit(w.prepare_commit(), 3)
    got = sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist())
    expected = sorted([(k, f"a{k}") for k in range(10)] + [(k, f"b{k}") for k in range(10, 20)]
                      + [(k, f"c{k}") for k in range(20, 25)] + [(k, f"o{k}") for k in range(100, 103)])
    assert got == expected and _unreferenced_data(t) == []


def test_a_writer_whose_round_landed_before_the_snapshots_since_expired_goes_on(tmp_path: Path) -> None:
    """The look falls back on the latest snapshot's live files when the snapshots after the last
    one it saw expired (an idle writer): a landed round is found there."""
    t = _table(tmp_path)
    w, c = t.new_writer("u"), t.new_committer("u")
    w.write_arrow(_rows(range(10), "a"))
    c.commit(w.prepare_commit(), 1)
    w.write_arrow(_rows(range(5, 15), "b"))
    w.request_compaction((), 0, full=True)  # its level-0 file compacted away in the same commit
    c.commit(w.prepare_commit(), 2)
    for i in range(3):  # other writers' commits, then every snapshot but the latest expires
        o = t.new_writer("o", write_only=True)
        o.write_arrow(_rows(range(100 + i, 101 + i), "o"))
        t.new_committer("o").commit(o.prepare_commit(), i + 1)
    t.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    assert len(t.snapshots()) == 1
    w.write_arrow(_rows(range(14, 16), "c"))
    w.request_compaction((), 0, full=True)
    c.commit(w.prepare_commit(), 3)
    assert _state(t) == {**{k: f"a{k}" for k in range(5)}, **{k: f"b{k}" for k in range(5, 14)},
                         **{k: f"c{k}" for k in range(14, 16)}, **{k: f"o{k}" for k in range(100, 103)}}

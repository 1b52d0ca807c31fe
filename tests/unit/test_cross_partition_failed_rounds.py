"""A compacting cross-partition upsert writer used again after one of its rounds failed.

Like any compacting primary-key writer (tests/unit/test_writer_after_failed_commit.py), it carries
each round's files into the next round's inline compaction, and looks whether its earlier rounds
landed before that (`ops/writer_rounds.py`): a round whose commit was rejected (a real commit
conflict) or aborted after an unknown outcome has its files deleted, so the next `prepare_commit`
refuses with `WriterStateLostError` (before the fix: `MissingDataFileError` while compacting),
deletes its own files, closes the writer and releases its key index and lease. A round whose data
landed but whose compaction did not makes it reload its buckets and go on. A round neither landed
nor deleted (never committed, an unknown outcome given up) stays pending, and the key index's
commit check refuses the next commit (`CommitMessage.key_index_pending`). The table always equals
a dict model of the rounds that landed, for ``deduplicate`` (a key moves) and ``partial-update``
(a key stays in its first partition) alike.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitConflictError, CommitStateUnknownError, LakeError, WriterStateLostError
from lake_assets.ops.writer_lease import LEASE_PREFIX

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
ENGINES = ["deduplicate", "partial-update"]
LOST = r"db\.t cannot continue: rows it prepared in an earlier round are not in the table.*write them again"
Model = dict[int, tuple[str, str]]


def _table(tmp_path: Path, engine: str) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    # small buckets (several per partition) and a compaction at every second sorted run
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"merge-engine": engine, "commit.max-retries": "0",
                                     "dynamic-bucket.target-row-num": "3", "num-sorted-run.compaction-trigger": "2"})


def _rows(batch: Model) -> pa.Table:
    return pa.table({"id": list(batch), "name": [v[0] for v in batch.values()],
                     "dt": [v[1] for v in batch.values()]}, schema=SCHEMA)


def _read(t: Table) -> Model:
    rows = t.refresh().to_arrow().to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), f"a key lives twice: {rows}"
    return {r["id"]: (r["name"], r["dt"]) for r in rows}


def _landed(model: Model, batch: Model, engine: str) -> None:
    """The model after ``batch`` landed: ``deduplicate`` moves a key to its row's partition,
    ``partial-update`` keeps it in the partition it was first placed in."""
    for k, (name, dt) in batch.items():
        model[k] = (name, model[k][1] if engine == "partial-update" and k in model else dt)


def _leases(t: Table) -> list[str]:
    return [c for c in t.store.consumer_manager().consumers() if c.startswith(LEASE_PREFIX)]


def _racing_commit(t: Table, model: Model, engine: str, fired: list[int]) -> Callable[[str], None]:
    """A fault hook: another user commits keys of its own just before this commit's snapshot put,
    which (``commit.max-retries`` = 0) then fails with a real `CommitConflictError`."""
    def hook(step: str) -> None:
        if step == "commit.before_snapshot" and t.store.fault_hook is hook:
            t.store.fault_hook = None
            batch = {100 + len(fired): (f"o{len(fired)}", "z")}
            with t.refresh().new_writer("other") as other:
                other.write_arrow(_rows(batch))
                t.new_committer("other").commit(other.prepare_commit(), len(fired) + 1)
            _landed(model, batch, engine)
            fired.append(1)
    return hook


def _fail_second_put(puts: list[str]) -> Callable[[str], None]:
    """A fault hook: a commit's APPEND lands, its COMPACT's snapshot put fails (proven not made)."""
    def hook(step: str) -> None:
        if step == "commit.before_snapshot":
            puts.append(step)
            if len(puts) == 2:
                raise OSError("storage refused the compaction's snapshot")
    return hook


def _fail_at(step: str, exc: BaseException) -> Callable[[str], None]:
    def hook(at: str) -> None:
        if at == step:
            raise exc
    return hook


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rejected_round_refuses_before_compacting_and_releases_the_lease(tmp_path: Path, engine: str) -> None:
    t = _table(tmp_path, engine)
    model: Model = {}
    w, c = t.new_writer("u"), t.new_committer("u")
    first = {1: ("a1", "a"), 2: ("a2", "a"), 3: ("a3", "b")}
    w.write_arrow(_rows(first))
    c.commit(w.prepare_commit(), 1)
    _landed(model, first, engine)
    assert len(_leases(t)) == 1
    second = {1: ("b1", "b"), 2: ("b2", "a")}  # key 1 moves (deduplicate) or stays in a
    w.write_arrow(_rows(second))
    failed = w.prepare_commit()
    ahead = {4: ("d4", "c")}  # a round prepared before the second one's commit (pipelined)
    w.write_arrow(_rows(ahead))
    prepared_ahead = w.prepare_commit()
    fired: list[int] = []
    t.store.fault_hook = _racing_commit(t, model, engine, fired)
    with pytest.raises(CommitConflictError, match="racing other committers"):
        c.commit(failed, 2)
    assert fired and _read(t) == model
    w.write_arrow(_rows({2: ("c2", "a"), 3: ("c3", "b")}))  # a second sorted run in a's and b's buckets
    with pytest.raises(WriterStateLostError, match=LOST) as lost:  # before the fix: MissingDataFileError
        w.prepare_commit()
    assert "messages it prepared after that round are refused at commit" in str(lost.value)
    with pytest.raises(CommitConflictError, match="did not land"):
        c.commit(prepared_ahead, 3)
    with pytest.raises(LakeError, match="closed"):
        w.write_arrow(_rows({9: ("x", "a")}))
    assert _leases(t) == [] and w.detach_key_index() is None  # its index and lease are released
    assert _read(t) == model
    assert [p for p in t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths if "/bucket-" in p] == []
    # the caller re-sends the failed round's rows and the refused ones through a new writer
    with t.refresh().new_writer("u2") as w2:
        w2.write_arrow(_rows(second))
        w2.write_arrow(_rows(ahead))
        w2.write_arrow(_rows({2: ("c2", "a"), 3: ("c3", "b")}))
        t.new_committer("u2").commit(w2.prepare_commit(), 1)
    _landed(model, second, engine)
    _landed(model, ahead, engine)
    _landed(model, {2: ("c2", "a"), 3: ("c3", "b")}, engine)
    assert _read(t) == model and _leases(t) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_round_whose_compaction_did_not_land_reloads_and_goes_on(tmp_path: Path, engine: str) -> None:
    t = _table(tmp_path, engine)
    model: Model = {}
    w, c = t.new_writer("u"), t.new_committer("u")
    for ident, batch in enumerate(({1: ("a1", "a"), 2: ("a2", "a")}, {1: ("b1", "b"), 2: ("b2", "a")}), 1):
        puts: list[str] = []
        w.write_arrow(_rows(batch))
        messages = w.prepare_commit()
        t.store.fault_hook = _fail_second_put(puts)
        c.commit(messages, ident)
        t.store.fault_hook = None
        _landed(model, batch, engine)
    assert any(m.compact_after for m in messages) and len(puts) == 2  # the second round compacted
    assert t.snapshots()[-1].commit_kind.name == "APPEND" and _read(t) == model
    third = {1: ("c1", "c"), 2: ("c2", "a"), 3: ("c3", "a")}
    w.write_arrow(_rows(third))
    c.commit(w.prepare_commit(), 3)  # before the fix: MissingDataFileError (the lost outputs)
    _landed(model, third, engine)
    assert t.snapshots()[-1].commit_kind.name == "COMPACT" and _read(t) == model
    w.close()
    assert _leases(t) == []


OUTCOMES = ("ok", "ok", "conflict", "never", "unknown_landed", "unknown_not")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", [1, 2])
def test_random_rounds_with_failed_commits_and_inline_compaction_match_a_model(tmp_path: Path, engine: str,
                                                                               seed: int) -> None:
    """Rounds of random moves of a few keys through long-lived compacting writers, whose commits
    land, conflict with a racing commit, are never made, or end unknown (landed or not). An
    unknown outcome is found by looking (`is_committed`), then retried or aborted. A writer
    refuses at `prepare_commit` exactly when one of its rounds' files were deleted (a conflict,
    an abort), and its commit is refused exactly when an earlier round of it is pending; the
    table equals the model after every step, and no lease outlives its writer."""
    rng = random.Random(seed)
    t = _table(tmp_path, engine)
    model: Model = {}
    fired: list[int] = []
    seen = {"lost": 0, "refused": 0, "unknown_landed": 0, "unknown_not": 0, "compactions": 0}
    ident = writer_no = 0
    w: Any = None
    committer: Any = None
    discarded = pending = False  # of the current writer: a round's files deleted / a round not landed

    def new_writer() -> None:
        nonlocal w, committer, writer_no, discarded, pending
        if w is not None:
            w.close()
        writer_no += 1
        w, committer = t.refresh().new_writer(f"w{writer_no}"), t.new_committer(f"w{writer_no}")
        discarded = pending = False

    new_writer()
    for _ in range(16):
        outcome = rng.choice(OUTCOMES)
        batch = {k: (f"v{ident}.{k}", rng.choice("abc")) for k in rng.sample(range(8), rng.randint(1, 4))}
        w.write_arrow(_rows(batch))
        try:
            messages = w.prepare_commit()
        except WriterStateLostError as exc:
            assert discarded, exc
            assert "write them again" in str(exc) and _leases(t) == []
            seen["lost"] += 1
            w = None
            new_writer()
            assert _read(t) == model
            continue
        assert not discarded, "a writer went on after a round of it was discarded"
        seen["compactions"] += any(m.compact_after for m in messages)
        ident += 1
        if outcome == "never":
            pending = True
            continue
        committer.store.fault_hook = {
            "conflict": _racing_commit(t, model, engine, fired),
            "unknown_landed": _fail_at("commit.after_snapshot", OSError("lost answer")),
            "unknown_not": _fail_at("commit.before_snapshot", CommitStateUnknownError("timeout"))}.get(outcome)
        try:
            committer.commit(messages, ident)
            landed = True
        except CommitConflictError as exc:
            landed = False
            if pending:  # refused by the key index's check: this round's files are deleted too
                assert "did not land" in str(exc)
                seen["refused"] += 1
                new_writer()
                assert _read(t) == model
                continue
            assert outcome == "conflict" and "racing" in str(exc)
            discarded = True
        except CommitStateUnknownError:
            assert outcome.startswith("unknown") and not pending
            committer.store.fault_hook = None
            landed = committer.is_committed(ident)  # found out by looking
            assert landed == (outcome == "unknown_landed")
            seen[outcome] += 1
            if not landed:
                if rng.random() < 0.5:
                    committer.commit(messages, ident)  # the same messages and identifier: lands now
                    landed = True
                else:
                    committer.abort(messages, ident)
                    discarded = True
        finally:
            committer.store.fault_hook = None
        assert not pending or not landed, "a round after one that did not land was committed"
        if landed:
            _landed(model, batch, engine)
        assert _read(t) == model
    w.close()
    assert _leases(t) == []
    assert all(seen.values()), seen  # the sequence met every case


def test_a_write_only_writer_refuses_at_the_first_write_after_a_lost_round(tmp_path: Path) -> None:
    """A write-only cross-partition writer (as a Spark task's or an ingest loop's) looks at its
    earlier rounds at the first write after a prepare_commit whose base did not pass them: a
    round still to be committed (pipelined) goes on; one whose commit was refused (its files
    deleted) raises `WriterStateLostError` before that write places a key or writes a file, instead
    of the commit refusing the next round after it was written. Against a dict model."""
    t = _table(tmp_path, "deduplicate")
    model: Model = {}
    w, c = t.new_writer("u", write_only=True), t.new_committer("u")
    for n, batch in enumerate([{1: ("a1", "a"), 2: ("a2", "a")}, {1: ("b1", "b"), 3: ("b3", "b")}]):
        w.write_arrow(_rows(batch))
        c.commit(w.prepare_commit(), n + 1)
        _landed(model, batch, "deduplicate")
    pipelined = {2: ("c2", "b")}
    w.write_arrow(_rows(pipelined))
    first = w.prepare_commit()
    assert len(w._rounds.rounds) == 1  # the landed rounds are not carried (a long-lived writer's memory)
    refused = {4: ("d4", "c")}
    w.write_arrow(_rows(refused))  # the round before is prepared, not committed: goes on
    second = w.prepare_commit()
    c.commit(first, 3)
    _landed(model, pipelined, "deduplicate")
    fired: list[int] = []
    t.store.fault_hook = _racing_commit(t, model, "deduplicate", fired)
    with pytest.raises(CommitConflictError, match="racing other committers"):
        c.commit(second, 4)
    assert fired and _read(t) == model
    files = sorted(p.name for p in Path(t.paths.root).rglob("data-*"))
    with pytest.raises(WriterStateLostError, match=LOST):
        w.write_arrow(_rows({1: ("e1", "c"), 5: ("e5", "a")}))
    assert sorted(p.name for p in Path(t.paths.root).rglob("data-*")) == files  # nothing written
    assert _leases(t) == [] and w.detach_key_index() is None
    with t.refresh().new_writer("u2", write_only=True) as w2:
        for batch in (refused, {1: ("e1", "c"), 5: ("e5", "a")}):
            w2.write_arrow(_rows(batch))
            _landed(model, batch, "deduplicate")
        t.new_committer("u2").commit(w2.prepare_commit(), 1)
    assert _read(t) == model

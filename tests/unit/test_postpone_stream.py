"""Change reads of postpone-bucket tables (``bucket = -2``) written by our writer
(ops/postpone_write.py) and moved into real buckets by the postpone compaction (ops/postpone.py):
what each stream emits, and when, per ``changelog-producer`` (ops/stream_postpone.py).

Paimon Java's own tests fix these semantics (``PostponeBucketTableITCase``:
``testNoneChangelogProducer``, ``testLookupChangelogProducer``, ``testInputChangelogProducer``);
Paimon Java 0.9, this suite's JVM oracle, predates postpone tables, so the cross-engine checks are
pypaimon's and pypaimon-rust's (tests/interop/test_postpone_stream_interop.py).
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets
from lake_assets.ops.stream import StreamEnumerator
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64()), ("op", pa.string())])


def rows(*items: tuple[int, int] | tuple[int, int, str], dt: str = "d1") -> pa.Table:
    """(key, value[, row kind]) rows of one partition."""
    return pa.table({"k": [i[0] for i in items], "dt": [dt] * len(items), "v": [i[1] for i in items],
                     "op": [i[2] if len(i) > 2 else "+I" for i in items]}, schema=SCHEMA)  # type: ignore[misc]


def make(catalog: Catalog, producer: str, **options: str) -> Table:
    return catalog.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", "rowkind.field": "op", "changelog-producer": producer,
                                         **options})


def emitted(t: Table, stream: StreamEnumerator) -> list[tuple[str, int, int]]:
    """(row kind, key, value) of everything the stream plans now, in read order."""
    reader = t.change_reader(columns=["k", "v"])
    out: list[tuple[str, int, int]] = []
    for batch in stream.poll(max_snapshots=100):
        for split in batch.splits:
            out += [(r["_row_kind"], r["k"], r["v"]) for r in reader.read(split).to_pylist()]
        stream.commit(batch.next_position)
    return out


def by_snapshot(t: Table, stream: StreamEnumerator) -> dict[int, list[tuple[str, int, int]]]:
    """Per snapshot the stream planned: what it emitted (snapshots emitting nothing included)."""
    reader = t.change_reader(columns=["k", "v"])
    out: dict[int, list[tuple[str, int, int]]] = {}
    for batch in stream.poll(max_snapshots=100):
        got = out.setdefault(batch.snapshot_id, [])
        for split in batch.splits:
            got += [(r["_row_kind"], r["k"], r["v"]) for r in reader.read(split).to_pylist()]
    return out


def test_none_streams_each_postponed_commit_as_written_and_skips_the_compaction(catalog: Catalog):
    """Paimon's testNoneChangelogProducer: with changelog-producer none a stream reads the
    postponed files of each APPEND snapshot as written (no merge: key 1 twice in one commit, and
    the delete with its kind), and the compaction's COMPACT snapshot adds nothing."""
    t = make(catalog, "none")
    stream = t.stream(mode="from-snapshot", snapshot_id=1)
    s1 = t.write_arrow(rows((1, 10), (2, 20), (1, 100)))
    s2 = t.write_arrow(rows((1, 101), (3, 31), (2, 20, "-D")))
    assert t.to_arrow().num_rows == 0  # batch reads do not see them yet
    s3 = t.compact().snapshot_id
    assert t.snapshot(s3).commit_kind == CommitKind.COMPACT
    assert by_snapshot(t, stream) == {
        s1: [("+I", 1, 10), ("+I", 2, 20), ("+I", 1, 100)],
        s2: [("+I", 1, 101), ("+I", 3, 31), ("-D", 2, 20)],
        s3: [],
    }
    assert sorted(t.to_arrow(columns=["k", "v"]).to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": 101}, {"k": 3, "v": 31}]


def test_none_full_phase_is_the_real_buckets_plus_what_waits_in_bucket_postpone(catalog: Catalog):
    """The second half of Paimon's testNoneChangelogProducer, and its full phase while rows wait:
    Java's starting scan of a stream with changelog-producer none reads bucket -2 splits too,
    without a merge, so the waiting rows come with their own kinds after the merged buckets."""
    t = make(catalog, "none")
    t.write_arrow(rows((1, 10), (2, 20), (1, 100)))
    t.write_arrow(rows((1, 101), (3, 31)))
    t.compact()
    t.write_arrow(rows((1, 102), (4, 42), (3, 31, "-D")))
    stream = t.stream(mode="latest-full")
    [full] = stream.poll(max_snapshots=1)
    assert {s.kind for s in full.splits} == {"full", "delta"}
    reader = t.change_reader(columns=["k", "v"])
    merged = [s for s in full.splits if s.kind == "full"]
    waiting = [s for s in full.splits if s.kind == "delta"]
    assert all(s.bucket >= 0 for s in merged) and [s.bucket for s in waiting] == [-2]
    assert sorted((r["_row_kind"], r["k"], r["v"]) for s in merged for r in reader.read(s).to_pylist()) == [
        ("+I", 1, 101), ("+I", 2, 20), ("+I", 3, 31)]
    assert [(r["_row_kind"], r["k"], r["v"]) for r in reader.read(waiting[0]).to_pylist()] == [
        ("+I", 1, 102), ("+I", 4, 42), ("-D", 3, 31)]
    # then the next commits, as they come; the compaction adds nothing
    t.write_arrow(rows((1, 103), (5, 53)))
    t.compact()
    assert emitted(t, stream) == [("+I", 1, 103), ("+I", 5, 53)]


@pytest.mark.parametrize("mode", ["from-snapshot-full", "earliest-full"])
def test_none_full_phases_at_a_snapshot_read_its_waiting_files(catalog: Catalog, mode: str):
    t = make(catalog, "none")
    first = t.write_arrow(rows((1, 10), (2, 20)))
    t.write_arrow(rows((1, 11)))
    kwargs = {"snapshot_id": first} if mode == "from-snapshot-full" else {}
    stream = t.stream(mode=mode, **kwargs)  # type: ignore[arg-type]
    assert emitted(t, stream) == [("+I", 1, 10), ("+I", 2, 20), ("+I", 1, 11)]


def test_lookup_streams_the_compactions_changelog_only(catalog: Catalog):
    """Paimon's testLookupChangelogProducer: with a changelog producer a stream reads real buckets
    only; postponed rows appear when the compaction moves them, as the changelog it produces
    against what the buckets held (+I for new keys, -U/+U for updated ones)."""
    t = make(catalog, "lookup")
    stream = t.stream(mode="latest-full")
    assert emitted(t, stream) == []
    t.write_arrow(pa.concat_tables([rows((10, 110), (20, 120)), rows((10, 210), (20, 220), dt="d2")]))
    assert emitted(t, stream) == []  # the APPEND snapshot: nothing in real buckets, no changelog
    t.compact()
    assert sorted(emitted(t, stream)) == [("+I", 10, 110), ("+I", 10, 210), ("+I", 20, 120), ("+I", 20, 220)]
    t.write_arrow(pa.concat_tables([rows((20, 121)), rows((30, 230), dt="d2")]))
    assert emitted(t, stream) == []
    # a stream started now: the full phase is the real buckets only, never bucket-postpone
    late = t.stream(mode="latest-full")
    assert sorted(emitted(t, late)) == [("+I", 10, 110), ("+I", 10, 210), ("+I", 20, 120), ("+I", 20, 220)]
    t.compact()
    assert sorted(emitted(t, stream)) == [("+I", 30, 230), ("+U", 20, 121), ("-U", 20, 120)]
    assert sorted(emitted(t, late)) == [("+I", 30, 230), ("+U", 20, 121), ("-U", 20, 120)]


def test_input_streams_every_replayed_row_at_the_compaction(catalog: Catalog):
    """Paimon's testInputChangelogProducer: the postpone writer writes no changelog; the compaction
    replays the postponed rows through writers with changelog-producer input, whose changelog is
    every row as written (per key in write order), committed with the COMPACT snapshot."""
    t = make(catalog, "input")
    stream = t.stream(mode="latest")
    t.write_arrow(rows((1, 10), (2, 20), (1, 100)))
    t.write_arrow(rows((1, 101), (2, 20, "-D")))
    assert emitted(t, stream) == []
    sid = t.compact().snapshot_id
    got = by_snapshot(t, stream)
    assert list(got) == [sid]
    assert sorted(got[sid]) == sorted([("+I", 1, 10), ("+I", 2, 20), ("+I", 1, 100), ("+I", 1, 101),
                                       ("-D", 2, 20)])
    assert [r for r in got[sid] if r[1] == 1] == [("+I", 1, 10), ("+I", 1, 100), ("+I", 1, 101)]


def test_full_compaction_streams_what_full_compactions_of_the_move_produce(catalog: Catalog):
    """As Java's postpone compaction (``write.compact(partition, bucket, false)``, universal
    compaction), the move compacts to the top level only when universal compaction picks it
    (here: from the second sorted run on, by size amplification); the full-compaction changelog
    comes with those compactions, not before."""
    t = make(catalog, "full-compaction", **{"num-sorted-run.compaction-trigger": "2",
                                            "compaction.max-size-amplification-percent": "0"})
    stream = t.stream(mode="latest")
    t.write_arrow(rows((1, 10), (2, 20)))
    t.compact()
    assert emitted(t, stream) == []  # one sorted run: the move stops at level 0
    t.write_arrow(rows((1, 11), (3, 30)))
    t.compact()
    assert sorted(emitted(t, stream)) == [("+I", 1, 11), ("+I", 2, 20), ("+I", 3, 30)]
    t.write_arrow(rows((1, 12), (2, 0, "-D")))
    t.compact()
    assert sorted(emitted(t, stream)) == [("+U", 1, 12), ("-D", 2, 20), ("-U", 1, 11)]


@pytest.mark.parametrize("producer", ["none", "input", "lookup"])
def test_incremental_batch_reads_see_real_buckets_only(catalog: Catalog, producer: str):
    """read_changes is Paimon's batch incremental read (incremental-between): its scan reads real
    buckets only whatever the producer, so with none the postponed rows never appear (the
    compaction is no delta), with a producer they come with the compaction's changelog."""
    t = make(catalog, producer)
    t.write_arrow(rows((1, 10), (2, 20)))
    t.write_arrow(rows((1, 11)))
    assert t.read_changes(0).num_rows == 0
    t.compact()
    got = sorted((r["_row_kind"], r["k"], r["v"]) for r in t.read_changes(0, columns=["k", "v"]).to_pylist())
    assert got == {"none": [], "input": [("+I", 1, 10), ("+I", 1, 11), ("+I", 2, 20)],
                   "lookup": [("+I", 1, 11), ("+I", 2, 20)]}[producer]
    assert [r["_row_kind"] for r in t.read_changes(0, source="delta").to_pylist()] == []


def test_consumer_restart_resumes_after_the_last_committed_snapshot(catalog: Catalog):
    """A consumer id stores the stream's position in the table: a restarted stream (new process,
    new enumerator) emits every postponed commit once, and expiry keeps what it has not read."""
    t = make(catalog, "none", **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                                 "snapshot.time-retained": "1 ms",
                                 # its writers' commits expire nothing (no position is stored before
                                 # the first commit of the stream); the compaction and expiry below do
                                 "write-only": "true"})
    stream = t.stream(mode="latest-full", consumer_id="etl")
    assert emitted(t, stream) == []  # an empty table: nothing
    t.write_arrow(rows((1, 10)))
    t.write_arrow(rows((2, 20)))
    [first] = stream.poll(max_snapshots=1)  # read one snapshot, then "crash" before the second
    stream.commit(first.next_position)
    t.write_arrow(rows((1, 11)))
    t.compact()
    t.expire_snapshots(older_than=timedelta(0))
    assert t.snapshot_manager.earliest_id() == first.next_position  # the consumer's next snapshot stays
    restarted = Catalog(str(t.store.paths.root).rsplit("/db.db/", 1)[0]).get_table("db.p").stream(
        mode="latest-full", consumer_id="etl")
    assert emitted(t, restarted) == [("+I", 2, 20), ("+I", 1, 11)]
    assert t.store.consumer_manager().get("etl").next_snapshot == t.snapshot_manager.latest_id() + 1


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_batch_writes_into_real_buckets_and_postponed_writes_in_one_stream(catalog: Catalog, producer: str):
    """A batch write into real buckets (Paimon's postpone.batch-write-fixed-bucket: write-only
    level-0 files, an APPEND snapshot) then a postponed write. With none both APPEND snapshots come
    as written and the compaction adds nothing; with lookup neither comes (no changelog yet), and
    the postpone compaction, which also compacts the real buckets' level 0, commits the changelog
    of both, the postponed value of key 1 last (Paimon's testWriteFixedBucketThenWritePostponeBucket)."""
    t = make(catalog, producer, **{"postpone.default-bucket-num": "2"})
    stream = t.stream(mode="latest")
    fixed = write_fixed_buckets(t.store, rows((1, 10), (2, 20)))
    assert fixed is not None
    assert {e.bucket for e in t.store.file_store_scan().delta_entries(t.snapshot(fixed))} <= {0, 1}
    postponed = t.write_arrow(rows((1, 11), (3, 30)))
    if producer == "none":
        got = by_snapshot(t, stream)
        assert {k: sorted(v) for k, v in got.items()} == {fixed: [("+I", 1, 10), ("+I", 2, 20)],
                                                         postponed: [("+I", 1, 11), ("+I", 3, 30)]}
        t.compact()
        assert emitted(t, stream) == []
    else:
        assert emitted(t, stream) == []
        t.compact()
        assert sorted(emitted(t, stream)) == [("+I", 1, 11), ("+I", 2, 20), ("+I", 3, 30)]


def test_lookup_full_phase_leaves_a_batch_writes_level_0_to_the_compactions_changelog(catalog: Catalog):
    """A batch write into real buckets leaves write-only level-0 files; a lookup stream's full
    phase reads levels above 0 only (Java's tryFirstPlan), so those rows come once, with the
    postpone compaction's changelog, not in the full phase and again after it."""
    t = make(catalog, "lookup", **{"postpone.default-bucket-num": "2"})
    write_fixed_buckets(t.store, rows((1, 10), (2, 20)))
    stream = t.stream(mode="latest-full")
    assert emitted(t, stream) == []
    t.compact()
    assert sorted(emitted(t, stream)) == [("+I", 1, 10), ("+I", 2, 20)]

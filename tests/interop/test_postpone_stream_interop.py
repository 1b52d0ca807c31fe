"""Change reads of postpone-bucket tables (``bucket = -2``) that pypaimon 2.1 and pypaimon-rust
wrote, streamed through our postpone compaction (ops/postpone.py), checked against pypaimon's
own streaming scan (ops/stream_postpone.py has the semantics, from Paimon Java 1.2+'s scans).

Paimon Java 0.9, the JVM oracle of the differential suite, predates postpone tables, so the
Paimon engines here are pypaimon (its streaming scan, `Pypaimon.stream_follow`) and the writers
of both Python Paimons. pypaimon's streaming scan agrees with Java's on the follow-up phase
(every snapshot after the start: bucket-postpone files as written with changelog-producer none,
the compaction's changelog otherwise); its starting full scan skips bucket-postpone even with
none, where Java's reads it, so full phases are checked against Java's rules alone
(tests/unit/test_postpone_stream.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import tests.interop.test_refuse_unsupported as engines
from lake_assets import Catalog
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table
from tests.interop.paimon import Pypaimon
from tests.interop.test_refuse_unsupported import batch, open_table

# the engine-written tables' fixtures, shared with test_refuse_unsupported
engine_tables = engines.engine_tables
table_copy = engines.table_copy

pytestmark = pytest.mark.interop

Change = tuple[int, str, int, str]  # (snapshot, row kind, id, v)


def ours(t: Table, start: int) -> list[Change]:
    """Everything our stream from snapshot ``start`` emits now, in read order."""
    stream = t.stream(mode="from-snapshot", snapshot_id=start)
    reader = t.change_reader()
    out: list[Change] = []
    for b in stream.poll(max_snapshots=100):
        for split in b.splits:
            out += [(b.snapshot_id, r["_row_kind"], r["id"], r["v"]) for r in reader.read(split).to_pylist()]
    return out


def theirs(pypaimon: Pypaimon, warehouse: Path | str, name: str, start: int) -> list[Change]:
    rows = pypaimon.stream_follow(warehouse, f"db.{name}", start).to_pylist()
    return [(r["_snapshot"], r["_row_kind"], r["id"], r["v"]) for r in rows]


def assert_streams_alike(t: Table, pypaimon: Pypaimon, warehouse: Path | str, name: str, start: int = 1
                         ) -> list[Change]:
    """Our stream and pypaimon's emit the same changes per snapshot, each key's in the same order
    (the order of different keys within a split is not a contract of either)."""
    mine, other = ours(t, start), theirs(pypaimon, warehouse, name, start)
    assert Counter(mine) == Counter(other)
    for key in {c[2] for c in mine}:
        assert [c for c in mine if c[2] == key] == [c for c in other if c[2] == key]
    return mine


def rows_of(changes: list[Change], snapshot: int) -> list[tuple[str, int, str]]:
    return sorted((k, i, v) for s, k, i, v in changes if s == snapshot)


def plus(ids: range, tag: str) -> list[tuple[str, int, str]]:
    return [("+I", i, f"{tag}{i}") for i in ids]


@pytest.mark.parametrize("name", ["postpone_avro", "postpone_parquet", "rust_postpone"])
def test_none_streams_the_engines_postponed_commits_as_written(table_copy, pypaimon, name):
    """Two commits of pypaimon / pypaimon-rust into bucket-postpone (changelog-producer none): a
    stream emits each as written, before any compaction, as pypaimon's stream does; our
    compaction's COMPACT snapshot adds nothing; an incremental batch read (real buckets only)
    returns nothing; the full phase of a stream started now holds every postponed row."""
    warehouse = table_copy(name)
    t, _ = open_table(warehouse, name)
    changes = assert_streams_alike(t, pypaimon, warehouse, name)
    assert rows_of(changes, 1) == plus(range(30), "a") and rows_of(changes, 2) == plus(range(15, 45), "b")
    assert t.read_changes(0).num_rows == 0
    full = t.stream(mode="latest-full")
    reader = t.change_reader()
    [phase] = full.poll(max_snapshots=1)
    assert sorted((r["_row_kind"], r["id"], r["v"]) for s in phase.splits for r in reader.read(s).to_pylist()) == \
        sorted(plus(range(30), "a") + plus(range(15, 45), "b"))
    sid = t.compact().snapshot_id
    assert t.snapshot(sid).commit_kind == CommitKind.COMPACT
    t, _ = open_table(warehouse, name)
    assert assert_streams_alike(t, pypaimon, warehouse, name) == changes  # the compaction emits nothing
    assert t.read_changes(0).num_rows == 0


def test_real_bucket_commits_and_postponed_commits_of_one_table(table_copy, pypaimon):
    """pypaimon-rust wrote two commits into 3 real buckets (its fixed-bucket writer), then one into
    bucket-postpone: a stream (none) emits all three as written; the incremental batch read only
    the real buckets' two, as Paimon's batch scans read real buckets only."""
    warehouse = table_copy("rust_postpone_fixed")
    t, _ = open_table(warehouse, "rust_postpone_fixed")
    changes = assert_streams_alike(t, pypaimon, warehouse, "rust_postpone_fixed")
    assert [rows_of(changes, s) for s in (1, 2, 3)] == [plus(range(30), "a"), plus(range(15, 45), "b"),
                                                        plus(range(40, 50), "c")]
    batch_read = t.read_changes(0)
    assert sorted((r["_row_kind"], r["id"], r["v"]) for r in batch_read.to_pylist()) == \
        sorted(plus(range(30), "a") + plus(range(15, 45), "b"))


@pytest.mark.parametrize("producer", ["lookup", "input"])
def test_producers_stream_the_compactions_changelog_of_pypaimons_rows(tmp_warehouse, pypaimon, producer):
    """pypaimon writes a postpone table with a changelog producer (its postpone writer writes no
    changelog); our compaction moves the rows and commits the changelog the producer makes; our
    stream and pypaimon's stream emit it, and nothing of the postponed APPEND snapshots."""
    pypaimon.create_table(tmp_warehouse, "db.c", engines.SCHEMA, primary_keys=["id"],
                          options={"bucket": "-2", "changelog-producer": producer})
    pypaimon.write(tmp_warehouse, "db.c", batch(range(3), "a"))
    pypaimon.write(tmp_warehouse, "db.c", batch(range(1, 4), "b"))
    t = Catalog(tmp_warehouse).get_table("db.c")
    first = t.compact().snapshot_id
    pypaimon.write(tmp_warehouse, "db.c", batch(range(2, 5), "c"))
    t = Catalog(tmp_warehouse).get_table("db.c")
    second = t.compact().snapshot_id
    changes = assert_streams_alike(t, pypaimon, tmp_warehouse, "c")
    assert {c[0] for c in changes} == {first, second}
    if producer == "lookup":
        assert rows_of(changes, first) == [("+I", 0, "a0"), ("+I", 1, "b1"), ("+I", 2, "b2"), ("+I", 3, "b3")]
        assert rows_of(changes, second) == [("+I", 4, "c4"), ("+U", 2, "c2"), ("+U", 3, "c3"),
                                            ("-U", 2, "b2"), ("-U", 3, "b3")]
    else:
        assert rows_of(changes, first) == sorted(plus(range(3), "a") + plus(range(1, 4), "b"))
        assert rows_of(changes, second) == plus(range(2, 5), "c")
    # a stream started after the first compaction, by a consumer, then restarted by it
    stream = t.stream(mode="from-snapshot", snapshot_id=first + 1, consumer_id="sink")
    reader = t.change_reader()
    got = [(b.snapshot_id, sorted(r["id"] for s in b.splits for r in reader.read(s).to_pylist()))
           for b in stream.poll(max_snapshots=1)]
    stream.commit()
    restarted = Catalog(tmp_warehouse).get_table("db.c").stream(consumer_id="sink")
    got += [(b.snapshot_id, sorted(r["id"] for s in b.splits for r in reader.read(s).to_pylist()))
            for b in restarted.poll(max_snapshots=10)]
    assert [g for g in got if g[1]] == [(second, sorted(c[2] for c in changes if c[0] == second))]


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_pypaimons_stream_of_our_postpone_table_emits_what_ours_does(tmp_warehouse, pypaimon, producer):
    """Our writer's bucket-postpone files and our compaction's output, streamed by pypaimon: the
    same changes per snapshot as our stream (none: each commit as written, lookup: the changelog)."""
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.o", engines.SCHEMA, primary_keys=["id"],
                         options={"bucket": "-2", "changelog-producer": producer})
    t.write_arrow(batch(range(5), "a"))
    t.write_arrow(batch(range(3, 8), "b"))
    t.compact()
    t.write_arrow(batch(range(6, 9), "c"))
    t.compact()
    changes = assert_streams_alike(t, pypaimon, tmp_warehouse, "o")
    kinds = Counter(c[1] for c in changes)
    # none: the three commits' 5 + 5 + 3 rows; lookup: 8 new keys, then keys 6 and 7 updated, 8 new
    assert kinds == ({"+I": 13} if producer == "none" else {"+I": 9, "-U": 2, "+U": 2})

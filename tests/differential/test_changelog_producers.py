"""Changelog producers against Paimon Java 0.9, both ways on one warehouse (see scenario.py).

The changes each engine produces (row kinds and values, per key in order) must be read the same
by both engines, as one-snapshot incremental reads and as streaming changelog scans, whichever
engine wrote and compacted the table.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError
from tests.java.oracle import JavaError, PaimonJava

from .scenario import C, Scenario, W, X, assert_agree, concat_changes, norm_changes

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64()),
                    ("op", pa.string())])
RK = {"rowkind.field": "op"}
RETAIN_3 = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3", "snapshot.expire.limit": "100"}


def _mixed(*rows: tuple[str, dict]) -> W:
    return W(*({**r, "op": kind} for kind, r in rows))


def _ins(*rows: dict) -> W:
    return W(*({**r, "op": "+I"} for r in rows))


# Updates, deletes, re-inserts and an unchanged update, spread over commits and compactions.
DEDUP_STEPS = [
    _ins({"k": 1, "v": "a", "n": 1}, {"k": 2, "v": "b", "n": 2}, {"k": 3, "v": "c", "n": 3}),
    _mixed(("+I", {"k": 1, "v": "a2", "n": 1}), ("-D", {"k": 2, "v": "b", "n": 2}), ("+I", {"k": 4, "v": "d"})),
    C(),
    _mixed(("+I", {"k": 2, "v": "b-again", "n": 2}), ("+I", {"k": 3, "v": "c", "n": 3}), ("+I", {"k": 1, "v": "x"}),
           ("+I", {"k": 1, "v": "a3", "n": 9})),
    _mixed(("-D", {"k": 4}), ("+I", {"k": 5, "v": "e"})),
    C(),
]


def test_input_producer(java: PaimonJava, wh: str) -> None:
    """``input``: each commit's records as written, row kinds included (no merge, no compaction needed)."""
    steps = [
        _ins({"k": 1, "v": "a", "n": 1}, {"k": 2, "v": "b"}),
        _mixed(("-U", {"k": 1, "v": "a", "n": 1}), ("+U", {"k": 1, "v": "a2", "n": 2}), ("-D", {"k": 2, "v": "b"}),
               ("+I", {"k": 3})),
        C(),
        _mixed(("+I", {"k": 2, "v": "b2"}), ("+U", {"k": 2, "v": "b3"}), ("-D", {"k": 3})),
    ]
    sc = Scenario(java, wh, SCHEMA, ["k"], {"changelog-producer": "input", **RK}, steps)
    assert_agree(sc.run_all())


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_producer_with_dedicated_compaction(java: PaimonJava, wh: str, producer: str) -> None:
    """``write-only`` writers and a dedicated full compaction: the COMPACT snapshot carries the
    changes since the previous compaction (+I, -U/+U pairs, -D) however many commits they span."""
    # ...with expiry in between and at the end (each engine expires what the other wrote)
    steps = [*DEDUP_STEPS[:3], X(), *DEDUP_STEPS[3:], X()]
    options = {"changelog-producer": producer, "write-only": "true", **RK, **RETAIN_3}
    sc = Scenario(java, wh, SCHEMA, ["k"], options, steps)
    assert_agree(sc.run_all())


def test_lookup_row_deduplicate(java: PaimonJava, wh: str) -> None:
    """``changelog-producer.row-deduplicate``: an update to the same values produces no -U/+U."""
    sc = Scenario(java, wh, SCHEMA, ["k"], {"changelog-producer": "lookup", "write-only": "true",
                                            "changelog-producer.row-deduplicate": "true", **RK}, DEDUP_STEPS)
    assert_agree(sc.run_all())


def test_lookup_partial_update(java: PaimonJava, wh: str) -> None:
    steps = [
        _ins({"k": 1, "v": "a"}, {"k": 2, "n": 2}),
        C(),
        _ins({"k": 1, "n": 10}, {"k": 3, "v": "c"}),
        _ins({"k": 1, "v": "a2"}, {"k": 2, "n": 2}),
        C(),
    ]
    sc = Scenario(java, wh, SCHEMA, ["k"], {"merge-engine": "partial-update", "changelog-producer": "lookup",
                                            "write-only": "true", **RK}, steps)
    assert_agree(sc.run_all())


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_aggregation_changelog(java: PaimonJava, wh: str, producer: str) -> None:
    steps = [
        _ins({"k": 1, "v": "a", "n": 1}, {"k": 2, "v": "b", "n": 5}),
        C(),
        _mixed(("+I", {"k": 1, "v": "b", "n": 2}), ("-U", {"k": 2, "n": 5}), ("+U", {"k": 2, "n": 7})),
        _ins({"k": 1, "n": 0}),
        C(),
    ]
    options = {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
               "fields.v.aggregate-function": "max", "fields.v.ignore-retract": "true",
               "changelog-producer": producer, "write-only": "true", **RK}
    sc = Scenario(java, wh, SCHEMA, ["k"], options, steps)
    assert_agree(sc.run_all())


def test_first_row_lookup_changelog(java: PaimonJava, wh: str) -> None:
    """first-row's changelog holds only each key's first +I."""
    steps = [
        _ins({"k": 1, "v": "first"}, {"k": 1, "v": "second"}),
        C(),
        _ins({"k": 1, "v": "third"}, {"k": 2, "v": "b"}),
        C(),
    ]
    sc = Scenario(java, wh, SCHEMA, ["k"], {"merge-engine": "first-row", "changelog-producer": "lookup",
                                            "write-only": "true", **RK}, steps)
    assert_agree(sc.run_all())


@pytest.mark.parametrize("producer", ["input", "full-compaction"])
def test_first_row_refuses_other_producers(java: PaimonJava, wh: str, lake: Catalog, producer: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    options = {"bucket": "1", "merge-engine": "first-row", "changelog-producer": producer}
    with pytest.raises(JavaError, match="Only support 'none' and 'lookup' changelog-producer"):
        java.create_table(wh, "db.java_fr", schema, ["k"], options=options)
    with pytest.raises(LakeError):
        lake.create_table("db.lake_fr", schema, primary_keys=["k"], options=options)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_producer_with_inline_compaction(java: PaimonJava, wh: str, producer: str) -> None:
    """Inline compaction in the writer commits the compaction's changelog (known disagreement 2,
    fixed): lookup after every commit, full-compaction on the commits that fully compact.
    Tables written by one engine only (a Java writer lives across commits here). For
    ``full-compaction.delta-commits = 2`` Java's core
    writer never compacts by itself (Flink's sink triggers it), so Java's writer is told to fully
    compact on every second commit, as that sink does."""
    options = {"changelog-producer": producer, **RK}
    if producer == "full-compaction":
        options["full-compaction.delta-commits"] = "2"
    writes = [s for s in DEDUP_STEPS if isinstance(s, W)]
    steps = [W(*s.rows, java_full_compaction=(producer == "full-compaction" and i % 2 == 1))
             for i, s in enumerate(writes)]
    sc = Scenario(java, wh, SCHEMA, ["k"], options, steps, long_lived_java_writer=True)
    assert_agree(sc.run_all(("java", "lake")))


def test_lookup_with_partial_dedicated_compaction(java: PaimonJava, wh: str) -> None:
    """A dedicated compaction that is not full: for lookup both engines must still compact level 0
    (its changes go to the changelog), as Java's lookup compaction strategy forces."""
    steps = [s if not isinstance(s, C) else C(full=False) for s in DEDUP_STEPS]
    sc = Scenario(java, wh, SCHEMA, ["k"], {"changelog-producer": "lookup", "write-only": "true", **RK}, steps)
    assert_agree(sc.run_all())


def test_partitioned_multi_bucket_changelog(java: PaimonJava, wh: str) -> None:
    """Changes of several partitions and buckets in one snapshot (the per-key order is what counts)."""
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                        ("v", pa.string()), ("op", pa.string())])

    def rows(kind: str, *pairs: tuple[str, int, str]) -> list[dict]:
        return [{"dt": dt, "k": k, "v": v, "op": kind} for dt, k, v in pairs]

    steps = [
        W(*rows("+I", *((dt, k, f"{dt}-{k}") for dt in ("d1", "d2") for k in range(6)))),
        C(),
        W(*rows("+I", ("d1", 1, "x"), ("d2", 2, "y"), ("d3", 0, "new")), *rows("-D", ("d1", 3, ""), ("d2", 4, ""))),
        C(),
    ]
    sc = Scenario(java, wh, schema, ["dt", "k"], {"changelog-producer": "lookup", "write-only": "true",
                                                  "bucket": "2", **RK}, steps, partition_keys=["dt"])
    assert_agree(sc.run_all())


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_incremental_read_over_several_snapshots(java: PaimonJava, wh: str, lake: Catalog, producer: str) -> None:
    """An incremental read of (start, end] spanning several snapshots. Java 0.9 puts every file of
    the range into merge-reading splits, so the changes of a key across snapshots are merged into
    fewer rows. Paimon 1.x and later (IncrementalDeltaStartingScanner: streaming splits, no merge)
    return every change, which lake_assets follows: its read equals Java's one-snapshot reads put
    end to end. Java 0.9's own answer is pinned to show it predates that behaviour."""
    options = {"bucket": "1", "changelog-producer": producer, **RK}
    if producer == "lookup":
        options["write-only"] = "true"
    java.create_table(wh, "db.t", SCHEMA, ["k"], options=options)
    for i, step in enumerate(DEDUP_STEPS):
        if isinstance(step, W):
            java.write(wh, "db.t", list(step.rows), schema=SCHEMA, commit_identifier=i + 1, commit_user="u",
                       options={"write-only": "true"})
        else:
            java.compact(wh, "db.t", [], 0, options={"write-only": "false"})
    latest = lake.get_table("db.t").snapshot_manager.latest_id()
    one_by_one = [java.read_changes(wh, "db.t", s - 1, s) for s in range(1, latest + 1)]
    expected = norm_changes(concat_changes(one_by_one), ["k"])
    assert norm_changes(lake.get_table("db.t").read_changes(0, latest), ["k"]) == expected
    java_09 = norm_changes(java.read_changes(wh, "db.t", 0, latest), ["k"])
    assert java_09 != expected
    assert sum(len(v) for _, v in java_09) < sum(len(v) for _, v in expected)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_lookup_with_sequence_field(java: PaimonJava, wh: str, producer: str) -> None:
    """``sequence.field`` with lookup: a late record with an older sequence changes nothing; a
    newer one produces -U/+U; ties go to the later write."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("seq", pa.int64()),
                        ("op", pa.string())])
    steps = [
        _ins({"k": 1, "v": "a", "seq": 5}, {"k": 2, "v": "b", "seq": 1}),
        C(),
        _ins({"k": 1, "v": "late", "seq": 4}, {"k": 2, "v": "b2", "seq": 1}, {"k": 3, "v": "c", "seq": None}),
        C(),
        _mixed(("-D", {"k": 1, "v": "old-delete", "seq": 3}), ("+I", {"k": 3, "v": "c2", "seq": 0})),
        C(),
    ]
    sc = Scenario(java, wh, schema, ["k"], {"changelog-producer": producer, "write-only": "true",
                                            "sequence.field": "seq", **RK}, steps)
    obs = sc.run_all()
    assert_agree(obs, what=("states",))  # agree: the failure below is in the changes alone
    assert_agree(obs)

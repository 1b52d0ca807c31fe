"""Cross-partition upsert writes (``bucket = -1``, a primary key without the partition field) against
Paimon Java 0.9.

The oracle writes such tables as Paimon's Flink sink does: its own ``GlobalIndexAssigner``
bootstrapped by ``IndexBootstrap`` from the table (``CrossPartitionOps.java``, RocksDB from
rocksdbjni). Per merge engine the same rounds of upserts - keys moving between partitions, moving
twice in one batch, moving back, deletes - go into three tables: one written by Java alone, one by
lake_assets on top of Java's first rows (bootstrapping its index from Java's files). Both read alike
in both engines, one row per key in the partition the engine says, and our table places every key
in the partition and bucket Java's places it. Java also writes on top of ours (its bootstrap from
our files), and ``cross-partition-upsert.index-ttl`` forgets keys alike.
"""

from __future__ import annotations

import os
import uuid

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import InvalidDataError
from lake_assets.lsm import bucket_events
from lake_assets.ops.expire import expire_snapshots
from lake_assets.spec.row_kind import RowKind
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table, rows_by_bucket

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64()), ("s", pa.string())])
KINDS = {"+I": RowKind.INSERT, "-D": RowKind.DELETE}

# (ids, partitions, kinds) per round: new keys, moves, a key moving twice and back within a batch,
# keys staying, deletes in the new and in the old partition
ROUNDS: list[list[tuple[int, str, str]]] = [
    [(i, "a" if i % 3 else "b", "+I") for i in range(12)],
    [(1, "b", "+I"), (2, "c", "+I"), (3, "a", "+I"), (12, "c", "+I"), (4, "c", "+I"), (4, "a", "+I"),
     (5, "b", "+I"), (5, "a", "+I"), (5, "c", "+I"), (13, "a", "+I"), (13, "b", "+I")],
    [(2, "a", "+I"), (6, "c", "-D"), (7, "a", "-D"), (8, "c", "+I"), (14, "b", "+I"), (1, "b", "+I"),
     (0, "c", "+I"), (9, "a", "+I"), (6, "a", "+I"), (7, "b", "+I"), (10, "c", "+I"), (11, "a", "+I"),
     (3, "c", "+I"), (15, "a", "+I")],
]

ENGINES = {
    "deduplicate": {},
    "partial-update": {},
    "aggregation": {"fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "listagg",
                    "fields.s.ignore-retract": "true"},
    "first-row": {},
}


def batch(round_no: int, engine: str = "deduplicate") -> tuple[pa.Table, list[str]]:
    spec = ROUNDS[round_no]
    if engine != "deduplicate":
        # a retraction names its key's partition (see the refusal test); no re-insert of a key
        # deleted in the same batch: Java 0.9's partial-update fails on it (an NPE in its merge)
        spec = [(i, "b" if (i, k) == (6, "-D") else p, k) for i, p, k in spec
                if round_no < 2 or i not in (6, 7) or k == "-D"]
    if engine == "aggregation":
        # no retractions: Java 0.9's last_non_null_value retract nulls the NOT NULL partition
        # field, which our engine keeps (grouping.fill_required), a difference of the engine
        spec = [(i, p, "+I") for i, p, _ in spec]
    data = pa.table({
        "id": [i for i, _, _ in spec], "dt": [p for _, p, _ in spec],
        "v": [100 * round_no + n for n in range(len(spec))],
        # partial-update: a null keeps the old value, so later rounds leave some fields alone
        "s": [None if (n + round_no) % 4 == 0 else f"r{round_no}n{n}" for n in range(len(spec))],
    }, schema=SCHEMA)
    return data, [k for _, _, k in spec]


def lake_write(t: Table, data: pa.Table, kinds: list[str]) -> None:
    user = f"lake-{uuid.uuid4()}"
    with t.refresh().new_writer(user) as w:
        w.write_arrow(data, kinds=np.array([KINDS[k] for k in kinds], dtype=np.int8))
        messages = w.prepare_commit()
    t.new_committer(user).commit(messages)


def placements(t: Table) -> dict[int, tuple[str, int]]:
    """Where each key lives: (partition, bucket), from our merged read of every bucket."""
    out: dict[int, tuple[str, int]] = {}
    for (part, bucket), rows in rows_by_bucket(t.refresh()).items():
        for key in rows.column("id").to_pylist():
            assert key not in out, f"key {key} in {out[key]} and in {(part[0], bucket)}"
            out[key] = (part[0], bucket)
    return out


@pytest.mark.parametrize("engine", list(ENGINES))
def test_upserts_moving_keys_read_and_place_as_javas(java: PaimonJava, wh: str, lake: Catalog, engine: str) -> None:
    options = {"bucket": "-1", "merge-engine": engine, "dynamic-bucket.target-row-num": "3", **ENGINES[engine]}
    if engine == "first-row":
        options["ignore-delete"] = "true"  # first-row takes no deletes (Java 0.9 refuses them too)
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"  # else Java 0.9 refuses deletes
    # aggregation: a -D retracts (sum subtracts; the partition field, a value field aggregated by
    # last_non_null_value, reads null), as in 0.9, which has no aggregation.remove-record-on-delete
    for name in ("db.java", "db.lake"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=options)
    ours = lake.get_table("db.lake")
    for r in range(len(ROUNDS)):
        data, kinds = batch(r, engine)
        java.write(wh, "db.java", data, kinds=kinds)
        if r == 0:  # Java writes the table's first rows; we upsert on top (our index from its files)
            java.write(wh, "db.lake", data, kinds=kinds)
            continue
        lake_write(ours, data, kinds)
        expected = java.read(wh, "db.java")
        ids = expected.column("id").to_pylist()
        assert len(ids) == len(set(ids)), f"round {r}: Java holds a key twice"
        assert_same_table(ours.refresh().to_arrow(), expected)
        assert_same_table(java.read(wh, "db.lake"), expected)
        # every key where Java's assigner put it, in the partition and the bucket
        assert placements(ours) == placements(lake.get_table("db.java")), f"round {r}"


def test_moved_key_is_retracted_in_its_old_bucket(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """deduplicate: a move writes a -D row into the key's old (partition, bucket), as Java's
    DeleteExistingProcessor does; no HASH index files are written (Java keeps none in this mode)."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "-1"})
    java.write(wh, "db.t", batch(0)[0])
    t = lake.get_table("db.t")
    lake_write(t, *batch(1))
    snap = t.refresh().snapshot_manager.latest()
    assert snap is not None and snap.index_manifest is None
    data, kinds = batch(2)
    java.write(wh, "db.t", data, kinds=kinds)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, "db.t"))


def test_index_ttl_forgets_old_keys_as_java(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """cross-partition-upsert.index-ttl: a bucket none of whose files is younger is not
    bootstrapped, so its keys are written as new keys (a moved key then lives in both partitions),
    in Java and here alike."""
    options = {"bucket": "-1", "cross-partition-upsert.index-ttl": "1 ms"}
    for name in ("db.java", "db.lake"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=options)
        java.write(wh, name, batch(0)[0])
    data, kinds = batch(1)
    java.write(wh, "db.java", data, kinds=kinds)
    lake_write(lake.get_table("db.lake"), data, kinds)
    expected = java.read(wh, "db.java")
    assert expected.num_rows > len(set(expected.column("id").to_pylist()))  # keys forgotten: duplicates
    assert_same_table(lake.get_table("db.lake").to_arrow(), expected)
    assert_same_table(java.read(wh, "db.lake"), expected)


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_retraction_in_another_partition_is_refused(java: PaimonJava, wh: str, lake: Catalog, engine: str) -> None:
    """partial-update / aggregation apply a row to its key's partition; Java 0.9 (and HEAD) would
    write a -D sent to another partition there as +I (its ProjectToRowFunction drops the row
    kind): we refuse it by name and write nothing."""
    options = {"bucket": "-1", "merge-engine": engine, **ENGINES[engine]}
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=options)
    java.write(wh, "db.t", batch(0)[0])
    before = java.read(wh, "db.t")
    t = lake.get_table("db.t")
    data, _ = batch(2)
    kinds = ["+I"] * data.num_rows
    kinds[1] = "-D"  # key 6 lives in b, the row says c
    with pytest.raises(InvalidDataError, match=r"1 retraction.*key \{'id': 6\} lives in \{'dt': 'b'\}"):
        lake_write(t, data, kinds)
    assert len(java.snapshots(wh, "db.t")) == 1
    assert_same_table(java.read(wh, "db.t"), before)


def _many_moves(round_no: int) -> tuple[pa.Table, list[str]]:
    """Every partition both loses and receives keys: each of 48 keys moves one partition on,
    every third moves again (every sixth back to where it was) later in the batch, interleaved
    with new keys and keys staying (round 1: 48 keys, 4 partitions)."""
    spec: list[tuple[int, str]] = []
    for i in range(48):
        p = (i + round_no) % 4
        spec.append((i, "abcd"[(p + 1) % 4]))
        if i % 4 == 0:
            spec.append((100 * round_no + i, "abcd"[i % 3]))  # a new key
        if i % 5 == 0:
            spec.append((i // 2, "abcd"[(p + 2) % 4] if i % 10 else "abcd"[p]))
    spec += [(i, "abcd"[(i + round_no + 2) % 4] if i % 6 else "abcd"[(i + round_no) % 4])
             for i in range(0, 48, 3)]
    data = pa.table({"id": [i for i, _ in spec], "dt": [p for _, p in spec],
                     "v": list(range(len(spec))), "s": [f"m{round_no}-{n}" for n in range(len(spec))]}, schema=SCHEMA)
    return data, ["+I"] * len(spec)


def test_many_moves_in_partitions_losing_and_receiving_place_as_javas(java: PaimonJava, wh: str, lake: Catalog,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """deduplicate, target 3: rounds in which every partition loses keys to moves and receives
    moved and new keys in one batch, keys moving twice and back, so slots freed by moves out are
    taken by later placements in between (the vectorized replay of Java's BucketAssigner, forced
    for these small batches; the event-by-event replay only for an assigner with a gap): every
    key in Java's partition and bucket."""
    monkeypatch.setattr(bucket_events, "EVENTS_PER_BUCKET", 0)
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}
    for name in ("db.java", "db.lake"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=options)
    first = pa.table({"id": list(range(48)), "dt": ["abcd"[i % 4] for i in range(48)], "v": list(range(48)),
                      "s": [None] * 48}, schema=SCHEMA)
    java.write(wh, "db.java", first)
    java.write(wh, "db.lake", first)
    ours = lake.get_table("db.lake")
    for r in (1, 2):
        data, kinds = _many_moves(r)
        java.write(wh, "db.java", data, kinds=kinds)
        lake_write(ours, data, kinds)
        theirs = placements(lake.get_table("db.java"))
        assert placements(ours) == theirs, f"round {r}"
        assert len(set(theirs.values())) >= len(theirs) // 3  # target 3: no bucket above it
    assert_same_table(ours.refresh().to_arrow(), java.read(wh, "db.java"))


def test_deletion_vector_table_written_by_java_and_by_us_alike(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """deletion-vectors.enabled: Java 0.9's own cross-partition writer (its lookup compaction
    marks moved and deleted keys' old rows in vectors) writes two rounds; we write the third on
    top (our index bootstrapped from Java's files and vectors, a key deleted by a vector is not
    in it) and place every key where Java places it in its own copy; Java then writes on top of
    ours, and both copies read alike in both engines."""
    options = {"bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "3"}
    for name in ("db.java", "db.lake"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=options)
        for r in (0, 1):
            data, kinds = batch(r)
            java.write(wh, name, data, kinds=kinds)
    assert any(s.get("indexManifest") for s in java.snapshots(wh, "db.lake"))  # Java's vectors
    ours = lake.get_table("db.lake")
    data, kinds = batch(2)
    java.write(wh, "db.java", data, kinds=kinds)
    lake_write(ours, data, kinds)
    assert placements(ours) == placements(lake.get_table("db.java"))
    assert_same_table(ours.refresh().to_arrow(), java.read(wh, "db.java"))
    data, kinds = batch(1)  # moves back, Java on top of our files and vectors
    for name in ("db.java", "db.lake"):
        java.write(wh, name, data, kinds=kinds)
    expected = java.read(wh, "db.java")
    assert len(set(expected.column("id").to_pylist())) == expected.num_rows
    assert_same_table(java.read(wh, "db.lake"), expected)
    assert_same_table(ours.refresh().to_arrow(), expected)


def test_javas_expiry_keeps_a_live_writers_snapshots(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """A long-lived writer's lease (ops/writer_lease.py) is a consumer to Paimon 0.9, which reads
    it without its ``lakeAssetsLeaseUntil`` field: Java's expiry keeps the snapshots from the
    writer's base on, so the writer's commit, made after other commits stopped its base moving and
    Java expired all it could, lands (it failed when the base had expired: "create a new writer").
    Once the writer closed, Java's expiry removes them."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "-1"})
    java.write(wh, "db.t", batch(0)[0])
    t = lake.get_table("db.t")
    expire = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms"}
    with t.refresh().new_writer("lake") as w:
        data, kinds = batch(1)
        w.write_arrow(data, kinds=np.array([KINDS[k] for k in kinds], dtype=np.int8))
        messages = w.prepare_commit()
        for k in (100, 101):
            java.write(wh, "db.t", pa.table({"id": [k], "dt": ["c"], "v": [k], "s": ["java"]}, schema=SCHEMA))
        leases = {c: n for c, n in java.consumers(wh, "db.t").items() if c.startswith("lake-writer-")}
        assert list(leases.values()) == [1]
        java.expire_snapshots(wh, "db.t", options=expire)
        assert [s["id"] for s in java.snapshots(wh, "db.t")] == [1, 2, 3]
        t.new_committer("lake").commit(messages, 1)
    assert java.consumers(wh, "db.t") == {}
    java.expire_snapshots(wh, "db.t", options=expire)
    assert [s["id"] for s in java.snapshots(wh, "db.t")] == [4]
    expected = java.read(wh, "db.t")
    ids = expected.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 16
    assert_same_table(t.refresh().to_arrow(), expected)


def test_javas_expiry_drops_a_crashed_writers_lease_only_with_consumer_expiration(
        java: PaimonJava, wh: str, lake: Catalog) -> None:
    """What Java 0.9 does with the lease of a writer that crashed (here: never closed, so its
    lease stays as a killed process leaves it). Java expires consumers in its commit's expiry
    only when ``consumer.expiration-time`` is set (``TableCommitImpl.expire`` →
    ``ConsumerManager.expire``), by the consumer file's modification time alone, whatever the file
    holds: nothing a lease file could say makes Java drop it otherwise. With the option the lease
    is that long and is rewritten at each renewal, so Java drops it exactly when it runs out for
    us (time passing is simulated by moving the file's modification time back). Without it Java
    keeps the lease and the snapshots from its base forever; lake_assets' expiry deletes it once
    past its end, and Java's next expiry then removes those snapshots."""
    expire = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms"}
    hour_s = 3600
    for name, options in (("db.idle", {"consumer.expiration-time": "1 h"}), ("db.plain", {})):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                          options={"bucket": "-1", **options})
        java.write(wh, name, batch(0)[0])
        t = lake.get_table(name)
        crashed = t.new_writer("crashed")
        data, kinds = batch(1)
        crashed.write_arrow(data, kinds=np.array([KINDS[k] for k in kinds], dtype=np.int8))
        ((cid, lease),) = t.refresh().store.consumer_manager().writer_leases().items()
        path = t.store.paths.consumer_file(cid)
        written_s = os.stat(path).st_mtime
        assert lease.next_snapshot == 1 and not lease.expired
        assert abs(lease.lease_until_ms / 1000 - written_s - hour_s) < 5  # 1 h: the option, or time-retained's default

        def age(seconds: float, path: str = path, written_s: float = written_s) -> None:
            os.utime(path, (written_s - seconds, written_s - seconds))  # as if `seconds` had passed

        def java_commit(k: int, name: str = name) -> None:  # Java's commit, then its expiry (sync)
            java.write(wh, name, pa.table({"id": [k], "dt": ["c"], "v": [k], "s": ["java"]}, schema=SCHEMA),
                       options=expire)

        age(hour_s - 60)  # a minute before its end: Java keeps it either way
        java_commit(100)
        assert [s["id"] for s in java.snapshots(wh, name)] == [1, 2]
        assert java.consumers(wh, name) == {cid: 1}
        age(hour_s + 60)  # a minute past its end
        java_commit(101)
        if options:
            assert java.consumers(wh, name) == {}
            assert [s["id"] for s in java.snapshots(wh, name)] == [3]
        else:
            assert java.consumers(wh, name) == {cid: 1}  # kept: Java never expires consumers here
            java.expire_snapshots(wh, name, options=expire)
            assert [s["id"] for s in java.snapshots(wh, name)] == [1, 2, 3]
            now_ms = int((written_s + hour_s + 60) * 1000)  # our expiry at the same simulated time
            expire_snapshots(t.refresh().store, retain_min=1, retain_max=1, older_than_ms=now_ms, now_ms=now_ms)
            assert java.consumers(wh, name) == {}
            java.expire_snapshots(wh, name, options=expire)
            assert [s["id"] for s in java.snapshots(wh, name)] == [3]
        expected = java.read(wh, name)
        assert expected.num_rows == 14  # batch 0's 12 keys, Java's 2; the crashed writer's rows never landed
        assert_same_table(t.refresh().to_arrow(), expected)
        crashed.abort()
        crashed.close()

"""Both engines on one warehouse: Java writes and we read, compact, expire and clean; then Java
reads and writes on top. And the other way round: we write, Java reads, compacts and expires."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows, assert_same_table, compare_every_snapshot

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("name", pa.string()),
        ("amount", pa.float64()),
        ("tags", pa.list_(pa.string())),
    ]
)


def batch(ids: range | list[int], dt: str | list[str], tag: str) -> pa.Table:
    ids = list(ids)
    dts = dt if isinstance(dt, list) else [dt] * len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "dt": pa.array(dts, pa.string()),
            "name": [f"{tag}-{i}" if i % 5 else None for i in ids],
            "amount": [i * 1.5 for i in ids],
            "tags": [[tag, str(i)] if i % 3 else None for i in ids],
        },
        schema=SCHEMA,
    )


LAYOUTS = [
    pytest.param(False, 1, id="unpartitioned-1-bucket"),
    pytest.param(False, 3, id="unpartitioned-3-buckets"),
    pytest.param(True, 2, id="partitioned-2-buckets"),
]


def _create_pk(java: PaimonJava, wh: str, name: str, partitioned: bool, buckets: int) -> None:
    java.create_table(
        wh, name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"] if partitioned else [],
        options={"bucket": str(buckets)},
    )


@pytest.mark.parametrize(("partitioned", "buckets"), LAYOUTS)
def test_java_writes_pk_we_read_maintain_java_continues(
    java: PaimonJava, wh: str, lake: Catalog, partitioned: bool, buckets: int
) -> None:
    name = "db.java_pk"
    _create_pk(java, wh, name, partitioned, buckets)
    java.write(wh, name, batch(range(0, 40), ["d1", "d2"] * 20, "a"))
    java.write(wh, name, batch(range(20, 60), ["d1", "d2"] * 20, "b"))  # half updates, half new
    # Deletes by row kind, including a key that does not exist (Java writes the -D anyway).
    java.write(wh, name, batch([0, 1, 2, 999], ["d1", "d2", "d1", "d1"], "x"), kinds=["-D"] * 4)
    java.compact(wh, name, full=True)
    java.write(wh, name, batch(range(50, 70), ["d1", "d2"] * 10, "c"), kinds=["+U"] * 20)
    java.write(wh, name, batch([5, 4], ["d2", "d1"], "y"), kinds=["-U", "-D"])

    t = lake.get_table(name)
    compare_every_snapshot(java, wh, name, t)

    # Our maintenance on Java's files.
    t.compact()
    assert_same_table(t.refresh().to_arrow(), java.read(wh, name))
    t.compact(full=True)
    t = t.refresh()
    latest = java.read(wh, name)
    assert_same_table(t.to_arrow(), latest)
    t.expire_snapshots(retain_min=1, retain_max=2)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert len(java.snapshots(wh, name)) == 2
    compare_every_snapshot(java, wh, name, t)

    # Java carries on on top of our compaction and expiry.
    java.write(wh, name, batch(range(60, 80), ["d1", "d2"] * 10, "d"))
    java.write(wh, name, batch([61], ["d2"], "z"), kinds=["-D"])
    java.compact(wh, name, full=False)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, name))
    java.expire_snapshots(wh, name, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    compare_every_snapshot(java, wh, name, t.refresh())


@pytest.mark.parametrize(("partitioned", "buckets"), LAYOUTS)
def test_we_write_pk_java_reads_compacts_expires(
    java: PaimonJava, wh: str, lake: Catalog, partitioned: bool, buckets: int
) -> None:
    name = "db.lake_pk"
    schema = SCHEMA.append(pa.field("op", pa.string()))
    t = lake.create_table(
        name, schema, primary_keys=["id", "dt"], partition_keys=["dt"] if partitioned else [],
        options={"bucket": str(buckets), "rowkind.field": "op"},
    )

    def ours(ids: list[int], dts: list[str], tag: str, op: str) -> pa.Table:
        b = batch(ids, dts, tag)
        return b.append_column("op", pa.array([op] * b.num_rows, pa.string()))

    t.write_arrow(ours(list(range(0, 40)), ["d1", "d2"] * 20, "a", "+I"))
    t.write_arrow(ours(list(range(20, 60)), ["d1", "d2"] * 20, "b", "+U"))
    t.write_arrow(ours([0, 1, 3, 998], ["d1", "d2", "d2", "d2"], "x", "-D"))
    t.compact()
    t.write_arrow(ours(list(range(55, 65)), ["d2", "d1"] * 5, "c", "+I"))
    compare_every_snapshot(java, wh, name, t)

    java.compact(wh, name, full=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, name))
    java.write(wh, name, ours([7, 8], ["d2", "d1"], "j", "-D"))  # Java honours rowkind.field too
    java.write(wh, name, ours([100], ["d1"], "j", "+I"))
    java.expire_snapshots(wh, name, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    assert 7 not in t.to_arrow(filter=[("dt", "=", "d2")]).column("id").to_pylist()

    # We continue on Java's compaction and expiry.
    t.write_arrow(ours([100, 101], ["d1", "d1"], "e", "+I"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    compare_every_snapshot(java, wh, name, t.refresh())


def _append_batch(start: int, n: int, tag: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "dt": pa.array(["d1", "d2"] * (n // 2), pa.string()),
            "name": [tag] * n,
            "amount": [float(i) for i in range(n)],
            "tags": [[tag]] * n,
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_append_table_both_directions(java: PaimonJava, wh: str, lake: Catalog, partitioned: bool) -> None:
    name = "db.events"
    # Small target file size so our append compaction has files to merge.
    java.create_table(
        wh, name, SCHEMA, partition_keys=["dt"] if partitioned else [], options={"bucket": "-1"},
    )
    for k in range(4):
        java.write(wh, name, _append_batch(k * 10, 10, f"j{k}"))
    t = lake.get_table(name)
    compare_every_snapshot(java, wh, name, t)

    t.write_arrow(_append_batch(100, 6, "ours"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=2)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    compare_every_snapshot(java, wh, name, t.refresh())

    java.write(wh, name, _append_batch(200, 4, "j-after"))
    d1_only = _append_batch(300, 2, "j-overwrite").set_column(1, "dt", pa.array(["d1", "d1"]))
    java.write(wh, name, d1_only, overwrite={"dt": "d1"} if partitioned else True)
    java.expire_snapshots(wh, name, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    # Overwriting d1 keeps d2: the odd ids (every batch starts at an even id and alternates d1, d2).
    kept_d2 = {i for i in [*range(0, 40), *range(100, 106), *range(200, 204)] if i % 2}
    expected_ids = {300, 301} | (kept_d2 if partitioned else set())
    assert set(t.to_arrow().column("id").to_pylist()) == expected_ids


def test_we_overwrite_java_reads(java: PaimonJava, wh: str, lake: Catalog) -> None:
    name = "db.ow"
    t = lake.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write_arrow(batch(range(10), ["d1", "d2"] * 5, "a"))
    t.write_arrow(batch([100, 102], "d1", "b"), overwrite={"dt": "d1"})
    compare_every_snapshot(java, wh, name, t)
    assert_same_rows(java.read(wh, name, filter=[("dt", "=", "d1")]), batch([100, 102], "d1", "b"))
    assert [s["commitKind"] for s in java.snapshots(wh, name)] == ["APPEND", "OVERWRITE"]


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_same_operations_same_snapshot_metadata(java: PaimonJava, wh: str, lake: Catalog, pk: bool) -> None:
    """Identical writes (with deletes) and a full compaction by each engine give snapshots with the
    same kinds and record counts (Paimon's totalRecordCount / deltaRecordCount / changelogRecordCount)."""
    schema = SCHEMA.append(pa.field("op", pa.string()))
    opts = {"bucket": "2" if pk else "-1", "write-only": "true", "rowkind.field": "op"} if pk else \
        {"bucket": "-1", "write-only": "true"}
    keys = ["id", "dt"] if pk else []
    java.create_table(wh, "db.j", schema, primary_keys=keys, partition_keys=["dt"], options=opts)
    t = lake.create_table("db.l", schema, primary_keys=keys, partition_keys=["dt"], options=opts)

    def b(ids: list[int], op: str) -> pa.Table:
        x = batch(ids, ["d1", "d2"] * (len(ids) // 2), op)
        return x.append_column("op", pa.array([op] * len(ids), pa.string()))

    batches = [b(list(range(10)), "+I"), b(list(range(4, 8)), "+U")]
    if pk:
        batches.append(b([0, 1], "-D"))
    for data in batches:
        java.write(wh, "db.j", data)
        t.write_arrow(data)
    java.compact(wh, "db.j", full=True, options={"write-only": "false"}) if pk else None
    t.compact(full=True) if pk else None
    fields = ("commitKind", "totalRecordCount", "deltaRecordCount")
    ours = [{f: s.get(f) for f in fields} for s in java.snapshots(wh, "db.l")]
    theirs = [{f: s.get(f) for f in fields} for s in java.snapshots(wh, "db.j")]
    assert ours == theirs
    assert_same_rows(java.read(wh, "db.l"), java.read(wh, "db.j"))


PAIMON_1X_SNAPSHOT_FIELDS = {"uuid", "baseManifestListSize", "deltaManifestListSize", "changelogManifestListSize",
                             "writerVersion", "nextRowId", "operation"}


def test_snapshot_files_carry_the_fields_java_writes(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.j", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "1"})
    t = lake.create_table("db.l", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "1"})
    data = batch(range(4), "d1", "a")
    java.write(wh, "db.j", data)
    t.write_arrow(data)
    (theirs,), (ours,) = java.snapshots(wh, "db.j"), java.snapshots(wh, "db.l")
    # Every field Java 0.9 writes with a value, we write (it writes changelogManifestList: null,
    # which Jackson reads like an absent field).
    assert {k for k, v in theirs.items() if v is not None} <= set(ours)
    assert (ours["changelogRecordCount"], ours["logOffsets"]) == (theirs["changelogRecordCount"],
                                                                  theirs["logOffsets"]) == (0, {})
    # The rest are Paimon 1.x fields (org.apache.paimon.Snapshot: uuid, the manifest list sizes,
    # writerVersion), which Java 0.9 ignores and reads past.
    assert set(ours) - set(theirs) <= PAIMON_1X_SNAPSHOT_FIELDS

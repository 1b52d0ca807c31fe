"""Batch writes of postpone tables into real buckets (ops/postpone_fixed_bucket.py, what the Spark
batch paths run) against pypaimon 2.1's ``new_postpone_fixed_bucket_write_builder`` and
pypaimon-rust's ``PostponeFixedBucketWriteBuilder`` (Paimon Java 0.9 predates postpone tables):
the same batch gives the same files' entries, the writers stack on each other's real buckets, and
every reader reads what we read before and after the postpone compaction."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table
from lake_assets.table_support import Op
from tests.interop.paimon import Pypaimon, PypaimonRust, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
OPTIONS = {"bucket": "-2", "postpone.target-row-num-per-bucket": "10"}


def batch(ids: range | list[int], dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def live(t: Table) -> list:
    t = t.refresh()
    return list(t.store.file_store_scan(Op.COMPACT).live_entries(t.store.snapshot_manager.latest()))


def read_alike(warehouse: str, name: str, pypaimon: Pypaimon, rust: PypaimonRust) -> list[dict]:
    t = Catalog(warehouse).get_table(f"db.{name}")
    keys = ["dt", "id"]
    ours = canonical(t.to_arrow(), keys)
    assert canonical(pypaimon.read(warehouse, f"db.{name}").select(SCHEMA.names), keys) == ours
    assert sorted(rust.read_rows(warehouse, f"db.{name}"), key=lambda r: tuple(r[k] for k in keys)) == ours
    return ours


def test_same_batch_same_entries_as_pypaimons_fixed_bucket_write(tmp_warehouse, pypaimon, rust):
    """Counts pypaimon 2.1's ceiling and Paimon HEAD's power of two agree on (20 / 10 rows: 2;
    8 / 10: 1), so the files must be the same."""
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    data = pa.concat_tables([batch(range(20), "d1", "a"), batch(range(100, 108), "d2", "a")])
    for name in ("theirs", "ours"):
        cat.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    pypaimon.write(tmp_warehouse, "db.theirs", data, fixed_bucket=True)
    write_fixed_buckets(cat.get_table("db.ours").store, data)
    entries = {}
    for name in ("theirs", "ours"):
        t = cat.get_table(f"db.{name}")
        assert t.store.snapshot_manager.latest().commit_kind == CommitKind.APPEND
        entries[name] = sorted((e.partition, e.bucket, e.total_buckets, e.file.level, e.file.row_count,
                                e.file.min_sequence_number, e.file.max_sequence_number, e.file.file_source,
                                e.file.min_key, e.file.max_key) for e in live(t))
    assert entries["ours"] == entries["theirs"]
    assert {e[2] for e in entries["ours"]} == {2, 1}  # ceil(20 / 10), ceil(8 / 10)
    assert read_alike(tmp_warehouse, "ours", pypaimon, rust) == read_alike(tmp_warehouse, "theirs", pypaimon, rust)


def test_writers_stack_on_each_others_real_buckets(tmp_warehouse, pypaimon, rust):
    """pypaimon, then we, then pypaimon-rust write real buckets of one table: each keeps the
    counts the partitions record and numbers after the files there, so the newest value wins for
    every reader (and after our compaction). pypaimon-rust's builder needs a default count."""
    pypaimon.create_table(tmp_warehouse, "db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "-2", "postpone.default-bucket-num": "3"})
    pypaimon.write(tmp_warehouse, "db.p", batch(range(25), "d1", "a"), fixed_bucket=True)
    t = Catalog(tmp_warehouse).get_table("db.p")
    write_fixed_buckets(t.store, pa.concat_tables([batch(range(10, 30), "d1", "b"), batch(range(4), "d2", "b")]))
    t.update_schema().set_option("postpone.default-bucket-num", "5").commit()  # d1 and d2 keep 3
    rust.write_fixed_bucket(tmp_warehouse, "db.p", batch(range(25, 40), "d1", "c"))
    assert {e.total_buckets for e in live(t)} == {3}
    want = ([{"id": i, "dt": "d1", "v": f"{'a' if i < 10 else 'b' if i < 25 else 'c'}{i}"} for i in range(40)]
            + [{"id": i, "dt": "d2", "v": f"b{i}"} for i in range(4)])
    assert read_alike(tmp_warehouse, "p", pypaimon, rust) == want
    t.refresh().compact()
    assert read_alike(tmp_warehouse, "p", pypaimon, rust) == want


def test_postponed_rows_then_our_fixed_bucket_write_then_compaction(tmp_warehouse, pypaimon, rust):
    """pypaimon postpones keys 0..9; our batch write puts 0..19 into real buckets: every reader
    sees ours at once (postponed rows are invisible to all). Our compaction then replays the
    postponed rows after the buckets' rows, as Java's PostponeBucketCompactOperator does, so
    pypaimon's postponed values supersede them, and every reader agrees."""
    pypaimon.create_table(tmp_warehouse, "db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "-2"})
    pypaimon.write(tmp_warehouse, "db.p", batch(range(10), "d1", "a"))
    t = Catalog(tmp_warehouse).get_table("db.p")
    write_fixed_buckets(t.store, batch(range(20), "d1", "B"))
    assert read_alike(tmp_warehouse, "p", pypaimon, rust) == [{"id": i, "dt": "d1", "v": f"B{i}"} for i in range(20)]
    t.refresh().compact()
    assert read_alike(tmp_warehouse, "p", pypaimon, rust) == [
        {"id": i, "dt": "d1", "v": f"{'a' if i < 10 else 'B'}{i}"} for i in range(20)]

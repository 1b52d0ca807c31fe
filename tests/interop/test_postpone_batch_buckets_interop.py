"""The bucket counts of a batch write into real buckets of a postpone table
(ops/postpone_batch.py) against pypaimon 2.1's ``PostponeFixedBucketWriteBuilder`` (Paimon Java 0.9
predates postpone tables). We plan as Paimon HEAD decides (``PostponeUtils.decideFixedBucketNum``:
the batch alone, rounded up to a power of two), pypaimon 2.1 as Paimon Spark 2.0.0 (the ceiling,
counting rows already postponed): the counts differ for the same batch, and every reader reads
either writer's real buckets, and keeps the counts the other recorded.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone_batch import StagedPartition, bucket_metadata, plan_batch_buckets
from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets
from lake_assets.spec.binary_row import serialize_row
from tests.interop.paimon import Pypaimon, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def batch(ids: range, dt: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def test_counts_differ_from_pypaimons_and_every_reader_reads_both(pypaimon: Pypaimon, rust, tmp_warehouse: str):
    for name in ("ours", "theirs"):
        pypaimon.create_table(tmp_warehouse, f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "-2", "postpone.target-row-num-per-bucket": "10"})
        # 5 rows of d2 wait in bucket-postpone: pypaimon 2.1 counts them with the batch's 8, HEAD does not
        pypaimon.write(tmp_warehouse, f"db.{name}", batch(range(100, 105), "d2"))
    ours = Catalog(tmp_warehouse).get_table("db.ours")
    d1, d2 = (serialize_row([dt], ours.store.schema.types(["dt"])) for dt in ("d1", "d2"))
    planned = plan_batch_buckets(ours.store, {d1: StagedPartition(25, 0), d2: StagedPartition(8, 0)})
    assert planned == {d1: 4, d2: 1}  # ceil(25 / 10) = 3 -> 4; ceil(8 / 10) = 1

    data = pa.concat_tables([batch(range(25), "d1"), batch(range(200, 208), "d2")])
    write_fixed_buckets(ours.store, data)
    pypaimon.write(tmp_warehouse, "db.theirs", data, fixed_bucket=True)
    theirs = Catalog(tmp_warehouse).get_table("db.theirs")
    assert dict(bucket_metadata(ours.refresh().store).bucket_counts) == planned
    assert dict(bucket_metadata(theirs.store).bucket_counts) == {d1: 3, d2: 2}
    # the real-bucket rows are visible at once to every reader (d2's postponed rows wait for the compaction)
    want = canonical(data, ["dt", "id"])
    for name in ("ours", "theirs"):
        assert canonical(Catalog(tmp_warehouse).get_table(f"db.{name}").to_arrow(), ["dt", "id"]) == want
        assert canonical(pypaimon.read(tmp_warehouse, f"db.{name}").select(SCHEMA.names), ["dt", "id"]) == want
        assert sorted(rust.read_rows(tmp_warehouse, f"db.{name}"), key=lambda r: (r["dt"], r["id"])) == want
    # later batches keep the counts the other writer recorded
    theirs.compact()
    write_fixed_buckets(theirs.refresh().store, batch(range(25, 60), "d1"))
    pypaimon.write(tmp_warehouse, "db.ours", batch(range(25, 60), "d1"), fixed_bucket=True)
    assert dict(bucket_metadata(theirs.refresh().store).bucket_counts) == {d1: 3, d2: 2}
    assert dict(bucket_metadata(ours.refresh().store).bucket_counts) == {d1: 4, d2: 1}
    for name in ("ours", "theirs"):
        t = Catalog(tmp_warehouse).get_table(f"db.{name}")
        assert canonical(t.to_arrow(), ["dt", "id"]) == canonical(
            pypaimon.read(tmp_warehouse, f"db.{name}").select(SCHEMA.names), ["dt", "id"])

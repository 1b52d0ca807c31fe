"""The bucket counts of a batch write into real buckets of a postpone table
(ops/postpone_batch.py) against pypaimon 2.1's ``PostponeFixedBucketWriteBuilder``, which writes
such batches (Paimon Java 0.9 predates postpone tables): for the same table and batch, the
counts pypaimon records are the ones we plan, and we read its real-bucket rows at once."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone_batch import StagedPartition, bucket_metadata, plan_batch_buckets
from lake_assets.spec.binary_row import serialize_row
from tests.interop.paimon import Pypaimon, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def batch(ids: range, dt: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def test_pypaimon_records_the_counts_we_plan_and_we_read_its_rows_at_once(pypaimon: Pypaimon, tmp_warehouse: str):
    pypaimon.create_table(tmp_warehouse, "db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "-2", "postpone.target-row-num-per-bucket": "10"})
    t = Catalog(tmp_warehouse).get_table("db.p")
    # 5 rows of d2 wait in bucket-postpone: both planners count them with the batch's 8 (13 rows: 2 buckets, not 1)
    t.write_arrow(batch(range(100, 105), "d2"))
    d1, d2 = (serialize_row([dt], t.store.schema.types(["dt"])) for dt in ("d1", "d2"))
    t = t.refresh()
    planned = plan_batch_buckets(t.store, {d1: StagedPartition(25, 0), d2: StagedPartition(8, 0)})
    assert planned == {d1: 3, d2: 2}

    data = pa.concat_tables([batch(range(25), "d1"), batch(range(200, 208), "d2")])
    pypaimon.write(tmp_warehouse, "db.p", data, fixed_bucket=True)
    t = t.refresh()
    assert dict(bucket_metadata(t.store).bucket_counts) == planned
    # the real-bucket rows are visible at once (d2's postponed rows wait for the compaction)
    ours = canonical(t.to_arrow(), ["dt", "id"])
    assert ours == canonical(data, ["dt", "id"]) == canonical(pypaimon.read(tmp_warehouse, "db.p"), ["dt", "id"])
    # a later fixed-bucket batch keeps the recorded counts, whatever its size
    t.compact()
    t = t.refresh()
    assert plan_batch_buckets(t.store, {d1: StagedPartition(1000, 0)}) == {d1: 3}
    pypaimon.write(tmp_warehouse, "db.p", batch(range(25, 60), "d1"), fixed_bucket=True)
    assert dict(bucket_metadata(t.refresh().store).bucket_counts) == {d1: 3, d2: 2}

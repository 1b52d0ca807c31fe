"""A postpone table's partition rescaled before a batch that outgrows it (ops/rescale.py, as Paimon
HEAD's SparkPostponeStagedCommitter), read by pypaimon 2.1 and pypaimon-rust: the OVERWRITE of the
partition's real buckets into the new count and the batch after it read alike in every reader,
and so does the postpone compaction that then merges the waiting rows into the rescaled buckets."""

from __future__ import annotations

import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets
from lake_assets.spec.snapshot import CommitKind
from tests.interop.test_postpone_fixed_bucket_interop import SCHEMA, batch, live, read_alike

pytestmark = pytest.mark.interop


def test_rescaled_partition_reads_alike_before_and_after_the_postpone_compaction(tmp_warehouse, pypaimon, rust):
    pypaimon.create_table(tmp_warehouse, "db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "-2", "postpone.default-bucket-num": "1",
                                   "postpone.target-row-num-per-bucket": "1"})
    pypaimon.write(tmp_warehouse, "db.p", batch(range(6), "d1", "a"), fixed_bucket=True)  # d1: 1 bucket
    pypaimon.write(tmp_warehouse, "db.p", batch(range(3), "d2", "a"), fixed_bucket=True)
    pypaimon.write(tmp_warehouse, "db.p", batch([2, 50], "d1", "p"))                      # postponed
    t = Catalog(tmp_warehouse).get_table("db.p")
    assert {e.total_buckets for e in live(t) if e.bucket >= 0} == {1}
    before = t.snapshot_manager.latest_id()

    write_fixed_buckets(t.store, batch(range(10, 50), "d1", "c"))  # 40 rows > 32 x 1 bucket
    t = t.refresh()
    kinds = [t.snapshot_manager.snapshot(i).commit_kind for i in (before + 1, before + 2)]
    assert kinds == [CommitKind.OVERWRITE, CommitKind.APPEND]
    assert {(e.bucket >= 0, e.total_buckets) for e in live(t)} == {(True, 64), (True, 1), (False, -2)}
    want = sorted([{"id": i, "dt": "d1", "v": f"a{i}"} for i in range(6)]
                  + [{"id": i, "dt": "d1", "v": f"c{i}"} for i in range(10, 50)]
                  + [{"id": i, "dt": "d2", "v": f"a{i}"} for i in range(3)], key=lambda r: (r["dt"], r["id"]))
    assert read_alike(tmp_warehouse, "p", pypaimon, rust) == want

    t.compact()
    assert {e.total_buckets for e in live(t) if e.bucket >= 0} == {64, 1}
    assert not [e for e in live(t) if e.bucket < 0]
    merged = {(r["dt"], r["id"]): r for r in want}
    merged[("d1", 2)] = {"id": 2, "dt": "d1", "v": "p2"}
    merged[("d1", 50)] = {"id": 50, "dt": "d1", "v": "p50"}
    assert read_alike(tmp_warehouse, "p", pypaimon, rust) == [merged[k] for k in sorted(merged)]

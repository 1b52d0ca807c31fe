"""A table after ``bucket`` N -> M with only some partitions overwritten (Paimon's rescale).

Partitions not overwritten keep their files and ``_TOTAL_BUCKETS`` = N: key filters select
buckets per entry's count (`lake_assets.ops.plan.BucketSelector`), and writes or compactions of
such a partition are refused (`lake_assets.ops.bucket_count`), as Java 0.9 refuses them. The
same scenarios against Paimon Java: tests/differential/test_bucket_rescale_java.py.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
KEYS = list(range(16))


def _rows(dt: str, v: int, keys: list[int] = KEYS) -> pa.Table:
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [v + k for k in keys]}, schema=SCHEMA)


@pytest.fixture
def rescaled(tmp_path):
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "bucket-key": "k"})
    t.write_arrow(pa.concat_tables([_rows("a", 0), _rows("b", 100)]))
    t.update_schema().set_option("bucket", "5").commit()
    t.write_arrow(_rows("b", 200), overwrite={"dt": "b"})
    return t


def test_key_filters_find_rows_in_both_counts(rescaled) -> None:
    scan = rescaled.store.file_store_scan()
    counts = {(s.partition_values, s.total_buckets) for s in scan.splits(scan.live_entries(rescaled.latest_snapshot()))}
    assert counts == {(("a",), 2), (("b",), 5)}
    for k in KEYS:
        got = rescaled.to_arrow(filter=[("k", "=", k)]).sort_by("dt").to_pylist()
        assert got == [{"k": k, "dt": "a", "v": k}, {"k": k, "dt": "b", "v": 200 + k}]
    got = rescaled.to_arrow(filter=[("k", "in", [3, 4, 9])])
    assert got.num_rows == 6
    # pruning still prunes: one bucket per count for one key
    assert {sp.total_buckets for sp in rescaled.plan(filter=[("k", "=", 7)])} == {2, 5}
    assert len(rescaled.plan(filter=[("k", "=", 7)])) == 2


def test_writes_and_compaction_of_the_old_count_are_refused(rescaled) -> None:
    before = rescaled.latest_snapshot().id
    with pytest.raises(UnsupportedFeatureError, match=r"dt=a .*new bucket num 5, but the previous bucket num is 2"):
        rescaled.write_arrow(_rows("a", 300, [1]))
    with pytest.raises(UnsupportedFeatureError, match="previous bucket num is 2"):
        rescaled.compact(full=True)
    assert rescaled.latest_snapshot().id == before
    rescaled.compact(full=True, partitions=[{"dt": "b"}])   # the rescaled partition compacts
    rescaled.write_arrow(_rows("b", 400, [1, 2]))           # and takes writes
    rescaled.write_arrow(_rows("c", 0, [1]))                # a new partition is in the new count
    rescaled.write_arrow(_rows("a", 500), overwrite={"dt": "a"})  # the overwrite rescales
    rescaled.write_arrow(_rows("a", 600, [3]))
    assert rescaled.to_arrow(filter=[("k", "=", 3)]).sort_by("dt").column("v").to_pylist() == [603, 203]

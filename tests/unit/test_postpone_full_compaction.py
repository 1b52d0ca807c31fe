"""Full compaction of a postpone-bucket table: the postponed rows move into real buckets (the
postpone compaction) and then every real bucket of the partitions is compacted into the top level
with the partition's bucket count, as a fixed-bucket table's full compaction.

Paimon's postpone compaction (Flink ``CompactAction``, Spark ``SparkPostponeCompactProcedure``)
ignores ``full`` and runs universal compaction on the real buckets holding level-0 files only; a
bucket whose small files universal compaction does not pick keeps them for ever there. ``full``
is what lifts them here (and what the small-file sensor asks for)."""

from __future__ import annotations

from collections import Counter

import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError

from .test_postpone_write import content, live, make, rows


def _real_files(t) -> Counter:
    return Counter((e.partition, e.bucket) for e in live(t) if e.bucket >= 0)


def _stuck_level0(catalog: Catalog):
    """A postpone table whose one real bucket of d1 holds four level-0 runs, under the default
    trigger of 5: the regular postpone compaction leaves them as they are."""
    post = make(catalog, "p", "-2", **{"postpone.default-bucket-num": "1"})
    fixed = make(catalog, "f", "1")
    for i in range(4):
        b = rows([i, 10 + i], "d1", f"r{i}")
        post.write_arrow(b)
        fixed.write_arrow(b)
        post.compact()
    return post, fixed


def test_full_compacts_the_small_files_the_postpone_compaction_leaves(catalog: Catalog):
    post, fixed = _stuck_level0(catalog)
    assert list(_real_files(post).values()) == [4]
    latest = post.latest_snapshot().id
    # what a request without full does here: nothing at all (the sensor used to ask for it again)
    assert post.compact().snapshot_id is None and post.latest_snapshot().id == latest

    result = post.compact(full=True)
    assert result.snapshot_id == latest + 1 and result.files_in == 4 and result.files_out == 1
    [entry] = [e for e in live(post) if e.bucket >= 0]
    assert entry.file.level == post.store.schema.core_options.num_levels - 1
    assert entry.total_buckets == 1
    assert content(post) == content(fixed)
    # nothing left to do: a second full compaction commits nothing
    assert post.compact(full=True).snapshot_id is None


def test_full_moves_postponed_rows_and_compacts_every_real_bucket_of_the_partitions(catalog: Catalog):
    post = make(catalog, "p", "-2", **{"postpone.default-bucket-num": "2"})
    fixed = make(catalog, "f", "2")
    for i in range(3):
        for b in (rows([i, 10 + i, 20 + i], "d1", f"r{i}"), rows([i, 30 + i], "d2", f"s{i}")):
            post.write_arrow(b)
            fixed.write_arrow(b)
        post.compact()
    late = [rows([1, 40], "d1", "late"), rows([50], "d3", "new", "+I")]
    for b in late:
        post.write_arrow(b)  # waits in bucket-postpone
        fixed.write_arrow(b)
    d2_before = {k: n for k, n in _real_files(post).items() if post.store.partition_path_of(k[0]) == "dt=d2"}
    assert max(_real_files(post).values()) > 1

    post.compact(full=True, partitions=[{"dt": "d1"}, {"dt": "d3"}])
    assert content(post) == content(fixed)
    by_path = Counter()
    for (part, bucket), n in _real_files(post).items():
        path = post.store.partition_path_of(part)
        if path == "dt=d2":
            assert d2_before[(part, bucket)] == n  # outside the partitions: untouched
        else:
            by_path[path] += 1
            assert n == 1, (path, bucket)
    assert by_path == {"dt=d1": 2, "dt=d3": 1}  # d3 holds one row: one of its two buckets
    top = post.store.schema.core_options.num_levels - 1
    assert all(e.file.level == top for e in live(post) if e.bucket >= 0 and post.store.partition_path_of(
        e.partition) != "dt=d2")
    assert not [e for e in live(post) if e.bucket == -2 and post.store.partition_path_of(e.partition) != "dt=d2"]


def test_a_unit_limit_is_still_refused(catalog: Catalog):
    post, _ = _stuck_level0(catalog)
    with pytest.raises(UnsupportedFeatureError, match="max_units"):
        post.compact(full=True, max_units=1)

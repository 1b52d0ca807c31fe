"""The postpone compaction also compacts the real buckets (Java's PostponeBucketCompactOperator):
postpone writers never compact, so without it level 0 would pile up in every real bucket, and
first-row tables (whose readers skip level 0) would never show the rows it moved."""

from __future__ import annotations

from collections import Counter

from lake_assets import Catalog
from lake_assets.ops.postpone import plan_postpone

from .test_postpone_write import content, live, make, rows


def _level0_per_bucket(t) -> Counter:
    return Counter((e.partition, e.bucket) for e in live(t) if e.bucket >= 0 and e.file.level == 0)


def test_first_row_rows_are_visible_after_the_postpone_compaction(catalog: Catalog):
    post = make(catalog, "p", "-2", **{"merge-engine": "first-row", "postpone.default-bucket-num": "2"})
    fixed = make(catalog, "f", "2", **{"merge-engine": "first-row"})
    for batch in ([rows([1, 2, 3], "d1", "a")], [rows([2, 4], "d1", "b"), rows([5], "d2", "b")],
                  [rows([1, 5, 6], "d2", "c")]):
        for b in batch:
            post.write_arrow(b)
            fixed.write_arrow(b)
        post.compact()
        assert content(post) == content(fixed)
        assert not _level0_per_bucket(post)  # first-row lifts level 0 at every compaction
    assert len(content(post)) == 7


def test_level_0_does_not_pile_up_over_many_rounds(catalog: Catalog):
    post = make(catalog, "p", "-2", **{"postpone.default-bucket-num": "1"})
    fixed = make(catalog, "f", "1")
    trigger = 5  # num-sorted-run.compaction-trigger's default
    for i in range(3 * trigger):
        b = rows([i % 4, 10 + i], "d1", f"r{i}")
        post.write_arrow(b)
        fixed.write_arrow(b)
        post.compact()
        assert max(_level0_per_bucket(post).values(), default=0) < trigger, i
    assert content(post) == content(fixed)


def test_write_only_tables_still_compact_in_the_postpone_compaction(catalog: Catalog):
    # Java's tableForPostponeRewrite sets write-only = false for this compaction
    post = make(catalog, "p", "-2", **{"merge-engine": "first-row", "write-only": "true",
                                        "postpone.default-bucket-num": "1"})
    post.write_arrow(rows([1, 2], "d1", "a"))
    post.compact()
    assert [r["id"] for r in content(post)] == [1, 2]


def test_a_partition_with_level_0_buckets_only_is_compacted_too(catalog: Catalog):
    post = make(catalog, "p", "-2", **{"postpone.default-bucket-num": "1"})
    for i in range(4):  # four level-0 runs in d1's bucket: under the default trigger of 5
        post.write_arrow(rows([i, 10 + i], "d1", f"r{i}"))
        post.compact()
    assert list(_level0_per_bucket(post).values()) == [4]
    post.write_arrow(rows([1], "d2", "other"))  # only d2 has postponed rows
    post.update_schema().set_option("num-sorted-run.compaction-trigger", "2").commit()
    post = post.refresh()
    units = {u.partition: u for u in plan_postpone(post.store)}
    assert len(units) == 2 and sorted(len(u.files) for u in units.values()) == [0, 1]
    assert sorted(u.level0_buckets for u in units.values()) == [(), (0,)]
    post.compact()
    counts = _level0_per_bucket(post)
    assert all(n < 4 for n in counts.values()), counts  # d1's runs were compacted, not only moved
    assert [(r["id"], r["dt"]) for r in content(post)] == [
        (0, "d1"), (1, "d1"), (2, "d1"), (3, "d1"), (10, "d1"), (11, "d1"), (12, "d1"), (13, "d1"), (1, "d2")]


def test_nothing_is_committed_when_no_bucket_needs_anything(catalog: Catalog):
    post = make(catalog, "p", "-2", **{"postpone.default-bucket-num": "1"})
    post.write_arrow(rows([1], "d1", "a"))
    post.compact()
    latest = post.snapshot_manager.latest_id()
    result = post.compact()  # level 0 holds one run, under the trigger: nothing to do
    assert post.snapshot_manager.latest_id() == latest
    assert result.snapshot_id is None and result.files_in == 0
    assert [r["id"] for r in content(post)] == [1]

"""Manifest pruning by partition null counts (Paimon's manifest filter: ``partitionFilter.test(
numAddedFiles + numDeletedFiles, min, max, nullCounts)``): ``is null`` skips manifests without a
null partition value, ``is not null`` and comparisons skip those whose entries are all in a null
partition; an unknown null count prunes nothing. The rows read equal an unfiltered read filtered."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog
from lake_assets.predicate import Predicate
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.manifest import ManifestFileMeta
from lake_assets.store.manifest_io import ManifestIO

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64())])


def _rows(p: list[Any], start: int) -> pa.Table:
    return pa.table({"p": p, "id": list(range(start, start + len(p)))}, schema=SCHEMA)


@pytest.fixture
def table(catalog: Catalog) -> Any:
    """Five commits, one manifest each: p null, p null, p = 1, p = 2, p null and 3 mixed."""
    t = catalog.create_table("db.n", SCHEMA, partition_keys=["p"])
    t.write_arrow(_rows([None] * 8, 0))
    t.write_arrow(_rows([None] * 2, 10))
    t.write_arrow(_rows([1] * 3, 20))
    t.write_arrow(_rows([2] * 3, 30))
    t.write_arrow(_rows([None, 3, 3, None], 40))
    return t


def _manifests_read(t: Any, flt: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[int]]:
    """How many data manifests a read with ``flt`` opens, and the ids it returns."""
    read: list[ManifestFileMeta] = []
    real = ManifestIO.read_manifests

    def counting(self: ManifestIO, metas: Any) -> Any:
        metas = list(metas)
        read.extend(metas)
        return real(self, metas)

    monkeypatch.setattr(ManifestIO, "read_manifests", counting)
    ids = sorted(t.to_arrow(filter=flt).column("id").to_pylist())
    monkeypatch.undo()
    return len(read), ids


def _expected(t: Any, keep: pc.Expression) -> list[int]:
    return sorted(t.to_arrow().filter(keep).column("id").to_pylist())


@pytest.mark.parametrize("merge_min_count", ["30", "2"])
def test_our_manifests_count_null_partitions_per_entry(catalog: Catalog, merge_min_count: str) -> None:
    """As Java's ManifestFile: a null count counts entries, so a manifest merged from two commits to
    the null partition records 2, not 1 distinct partition."""
    t = catalog.create_table("db.m", SCHEMA, partition_keys=["p"],
                             options={"manifest.merge-min-count": merge_min_count})
    for start, p in ((0, [None] * 3), (10, [None, 1]), (20, [None] * 2), (30, [2])):
        t.write_arrow(_rows(p, start))
    scan = t.store.file_store_scan()
    metas = scan.data_manifests(t.latest_snapshot())
    assert len(metas) == (4 if merge_min_count == "30" else 2)
    for meta, entries in zip(metas, scan.manifest_io.read_manifests(metas), strict=True):
        assert len(entries) == meta.num_added_files + meta.num_deleted_files
        nulls = sum(1 for e in entries if scan.partition_values(e.partition)[0] is None)
        assert meta.partition_stats.null_counts == (nulls,)
    if merge_min_count == "2":  # merged: one manifest holds the null partition's files of 3 commits
        assert max(m.partition_stats.null_counts[0] for m in metas) == 3


@pytest.mark.parametrize(("flt", "keep", "manifests"), [
    ([("p", "is null")], pc.field("p").is_null(), 3),  # the two null commits and the mixed one
    ([("p", "is not null")], pc.field("p").is_valid(), 3),  # not the two all-null ones
    ([("p", "=", 1)], pc.field("p") == 1, 1),
    ([("p", "=", 3)], pc.field("p") == 3, 1),
    ([("p", "!=", 1)], pc.field("p") != 1, 2),  # a != prunes a manifest of that one value only
    ([("p", ">", 0)], pc.field("p") > 0, 3),
    ([("p", "in", [2, None])], pc.field("p") == 2, 1),
    ([[("p", "is null")], [("p", "=", 2)]], pc.field("p").is_null() | (pc.field("p") == 2), 4),
    ([("p", "is null"), ("id", "<", 5)], pc.field("p").is_null() & (pc.field("id") < 5), 3),
], ids=str)
def test_null_counts_prune_manifests(table: Any, flt: Any, keep: pc.Expression, manifests: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    read, ids = _manifests_read(table, flt, monkeypatch)
    assert ids == _expected(table, keep)
    assert ids  # every filter here matches some row
    assert read == manifests
    everything, _ = _manifests_read(table, None, monkeypatch)
    assert everything == 5


def test_unknown_null_counts_prune_nothing(table: Any) -> None:
    """A manifest without null counts (none recorded, a list of another length, a count above its
    entries) is kept for every null test; min/max pruning still applies."""
    scan = table.store.file_store_scan()
    metas = scan.data_manifests(table.latest_snapshot())
    pred_types = scan.partition_types

    def values(m: ManifestFileMeta) -> Any:
        return deserialize_row(m.partition_stats.min_values, pred_types)[0]

    all_null = next(m for m in metas if m.partition_stats.null_counts == (m.num_added_files,))
    p1 = next(m for m in metas if values(m) == 1)

    def keeps(meta: ManifestFileMeta, flt: Any) -> bool:
        pred = Predicate.of(flt)
        assert pred is not None

        def rng(lo: Any, hi: Any, nulls: Any, rows: int) -> bool:
            return pred.test_ranges({"p": lo[0]}, {"p": hi[0]}, {"p": nulls[0]}, rows)
        return scan._keep_manifest(meta, rng, None)

    assert not keeps(all_null, [("p", "is not null")]) and not keeps(all_null, [("p", "=", 1)])
    assert not keeps(p1, [("p", "is null")])
    for counts in (None, (), (1, 1), (None,), (99,)):
        gone = dataclasses.replace(all_null, partition_stats=dataclasses.replace(all_null.partition_stats,
                                                                                  null_counts=counts))
        assert keeps(gone, [("p", "is not null")]) and keeps(gone, [("p", "=", 1)])
        unknown_p1 = dataclasses.replace(p1, partition_stats=dataclasses.replace(p1.partition_stats,
                                                                                 null_counts=counts))
        assert keeps(unknown_p1, [("p", "is null")])  # (5,): more nulls than entries is no count
        assert not keeps(unknown_p1, [("p", "=", 2)])  # min/max still prune

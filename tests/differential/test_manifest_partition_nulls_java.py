"""Manifest partition null counts against Paimon Java 0.9: the counts Java's ``ManifestFile``
writes (one per entry with a null partition value) are what our manifest pruning reads, and ours
are what Java's ``filterManifestFileMeta`` reads (it prunes a comparison when the null count
equals the manifest's entry count). Both engines return the same rows for every filter, on tables
either wrote, and our reads skip the manifests the counts rule out."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog
from lake_assets.spec.manifest import ManifestFileMeta
from lake_assets.store.manifest_io import ManifestIO
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64())])
# one commit each: a manifest whose entries are all in the null partition, two of one value, a mixed one
COMMITS: list[list[Any]] = [[None] * 4, [1] * 3, [2] * 3, [None, 3, 3]]

# (filter, the same as an Arrow expression, data manifests a pruned read opens)
FILTERS: list[tuple[Any, pc.Expression, int]] = [
    ([("p", "is null")], pc.field("p").is_null(), 2),
    ([("p", "is not null")], pc.field("p").is_valid(), 3),
    ([("p", "=", 1)], pc.field("p") == 1, 1),
    ([("p", "<", 3)], pc.field("p") < 3, 2),
    ([("p", "in", [3, None])], pc.field("p") == 3, 1),
]


def _table(n: int) -> pa.Table:
    return pa.table({"p": COMMITS[n], "id": [10 * n + i for i in range(len(COMMITS[n]))]}, schema=SCHEMA)


def _read_counting(t: Any, flt: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[int, pa.Table]:
    read: list[ManifestFileMeta] = []
    real = ManifestIO.read_manifests

    def counting(self: ManifestIO, metas: Any) -> Any:
        metas = list(metas)
        read.extend(metas)
        return real(self, metas)

    monkeypatch.setattr(ManifestIO, "read_manifests", counting)
    rows = t.to_arrow(filter=flt)
    monkeypatch.undo()
    return len(read), rows


@pytest.mark.parametrize("writer", ["java", "ours"])
def test_null_partition_manifests(java: PaimonJava, wh: str, lake: Catalog, writer: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"db.{writer}"
    if writer == "java":
        java.create_table(wh, name, SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
        for n in range(len(COMMITS)):
            java.write(wh, name, _table(n))
    else:
        t = lake.create_table(name, SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
        for n in range(len(COMMITS)):
            t.write_arrow(_table(n))
    t = lake.get_table(name)
    scan = t.store.file_store_scan()
    metas = scan.data_manifests(t.latest_snapshot())
    assert len(metas) == len(COMMITS)
    for meta, entries in zip(metas, scan.manifest_io.read_manifests(metas), strict=True):
        nulls = sum(1 for e in entries if scan.partition_values(e.partition)[0] is None)
        assert meta.partition_stats.null_counts == (nulls,)  # per entry, whoever wrote it
    everything = t.to_arrow()
    for flt, keep, manifests in FILTERS:
        read, rows = _read_counting(t, flt, monkeypatch)
        assert_same_rows(rows, everything.filter(keep))
        assert_same_rows(rows, java.read(wh, name, filter=flt))
        assert rows.num_rows > 0
        assert read == manifests, flt

"""What deleting a tag costs: each distinct manifest is read once, however many snapshots, tags
and changelogs share it (an automatic tag's expiry runs at commit time, so a read per snapshot
per manifest would make every commit of a table with many retained snapshots slow)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.store.manifest_io import ManifestIO

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
_EVERYTHING = datetime.now() + timedelta(days=1)


def _write(t: Table, keys: range, v: int) -> None:
    t.write_arrow(pa.table({"k": list(keys), "v": [v] * len(keys)}, schema=SCHEMA))


@pytest.fixture
def manifest_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every manifest a ManifestIO is asked for, by name (cached or not: each answer is a list of
    entries its caller then walks)."""
    reads: Counter[str] = Counter()
    real = ManifestIO.read_manifest

    def counting(self: ManifestIO, name: str, expected_size: int | None = None) -> Any:
        reads[name] += 1
        return real(self, name, expected_size)

    monkeypatch.setattr(ManifestIO, "read_manifest", counting)
    yield reads


def _history(catalog: Catalog, retained: int) -> tuple[Table, set[str]]:
    """A tag whose snapshot expired and whose files a full compaction replaced, then ``retained``
    snapshots that share the manifests of every commit before them."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", "write-only": "true", "manifest.merge-min-count": "1000",
                                      "snapshot.num-retained.max": "1000"})
    for v in range(3):
        _write(t, range(100), v)  # the same keys: the compaction merges them into new files
    t.create_tag("old")
    tagged = {t.store.data_file_path(e.partition, e.bucket, e.file)
              for e in t.store.file_store_scan().live_entries(t.latest_snapshot())}
    t.compact(full=True)
    for i in range(retained):
        _write(t, range(1000 + i, 1001 + i), i)
    t.expire_snapshots(retain_min=retained, retain_max=retained, older_than=_EVERYTHING)
    assert len(t.snapshots()) == retained
    return t, tagged


def test_fifty_retained_snapshots_read_each_manifest_once(catalog: Catalog, manifest_reads: Counter[str]) -> None:
    t, tagged = _history(catalog, 50)
    manifest_reads.clear()
    result = t.delete_tag("old")
    assert set(result.deleted_data_files) == tagged  # the compaction replaced every file the tag held
    assert manifest_reads, "the retained snapshots' manifests were not read at all"
    assert max(manifest_reads.values()) == 1, manifest_reads.most_common(3)
    assert len(manifest_reads) <= 55  # 52 commits' manifests (data, compaction), nothing per snapshot
    assert sorted(t.to_arrow().column("k").to_pylist()) == [*range(100), *range(1000, 1050)]
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []


def test_a_tag_whose_files_the_latest_snapshot_keeps_reads_only_the_latest(
        catalog: Catalog, manifest_reads: Counter[str]) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "write-only": "true", "manifest.merge-min-count": "1000"})
    _write(t, range(10), 0)
    t.create_tag("first")
    for i in range(30):
        _write(t, range(100 + i, 101 + i), i)
    t.expire_snapshots(retain_min=20, retain_max=20, older_than=_EVERYTHING)
    manifest_reads.clear()
    assert t.delete_tag("first").deleted_data_files == []  # still live: nothing to look for further
    latest = t.latest_snapshot()
    mio = t.store.manifest_io()
    latest_manifests = {m.file_name for m in
                        [*mio.read_manifest_list(latest.base_manifest_list),
                         *mio.read_manifest_list(latest.delta_manifest_list)]}
    assert set(manifest_reads) <= latest_manifests and max(manifest_reads.values()) == 1

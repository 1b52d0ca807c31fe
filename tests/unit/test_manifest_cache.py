"""The process-wide cache of decoded manifest files (store/manifest_io.py)."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.store import manifest_io


def test_written_manifests_are_served_from_the_cache_and_the_cache_is_bounded(catalog: Catalog) -> None:
    t = catalog.create_table("db.cached", pa.schema([("k", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2]}))
    mio = t.store.manifest_io()
    snap = t.latest_snapshot()
    metas = mio.read_manifest_list(snap.delta_manifest_list)
    (entry,) = mio.read_manifest(metas[0].file_name, metas[0].file_size)
    # The writer filled the cache: reads do not go to storage, even once the file is gone there.
    for name in (snap.delta_manifest_list, metas[0].file_name):
        t.file_io.delete(t.paths.manifest_file(name))
    assert mio.read_manifest_list(snap.delta_manifest_list) == metas
    assert mio.read_manifest(metas[0].file_name, metas[0].file_size) == [entry]
    # Least recently used slots go first once the bound is reached.
    capacity = manifest_io._cache_slot.cache_info().maxsize
    assert capacity is not None
    for i in range(capacity):
        manifest_io._cache_slot(f"memory://elsewhere/manifest-{i}")
    assert manifest_io._cache_slot(t.paths.manifest_file(metas[0].file_name)).records is None


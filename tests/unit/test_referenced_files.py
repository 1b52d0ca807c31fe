"""`orphans.referenced_files` reads the entries of the earliest retained snapshot's base and of every
retained delta only (a later base is implied by them); what it finds must be every data file any
retained snapshot's base or delta names, whatever the history: compactions, overwrites, expiry, a
rollback as latest re-adding files a later snapshot deleted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.orphans import referenced_files, retained_snapshots

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64())])


def _every_listed_name(table: object) -> set[str]:
    """The data files named by every entry of every retained snapshot's base and delta lists."""
    store = table.store  # type: ignore[attr-defined]
    mio = store.file_store_scan().manifest_io
    names = set()
    for snap in retained_snapshots(store):
        for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
            for meta in mio.read_manifest_list(list_name):
                names |= {e.file.file_name for e in mio.read_manifest(meta.file_name, meta.file_size)}
    return names


def test_the_entries_read_name_every_file_every_retained_snapshot_lists(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                             options={"bucket": "2", "manifest.merge-min-count": "2",
                                      "snapshot.num-retained.min": "1"})
    for v in range(4):
        t.write_arrow(pa.table({"k": [v, v + 10], "p": ["a", "b"], "v": [v, v]}, schema=SCHEMA))
    t.create_tag("t1")
    t.compact(full=True)
    t.write_arrow(pa.table({"k": [1], "p": ["a"], "v": [9]}, schema=SCHEMA), overwrite={"p": "a"})
    t.write_arrow(pa.table({"k": [7], "p": ["b"], "v": [7]}, schema=SCHEMA))
    t.expire_snapshots(retain_max=4)
    t.rollback_to_as_latest(tag="t1")  # re-adds files the compaction and overwrite removed
    t.write_arrow(pa.table({"k": [8], "p": ["a"], "v": [8]}, schema=SCHEMA))
    assert t.snapshot_manager.earliest_id() > 1
    want = _every_listed_name(t)
    found = {p.rsplit("/", 1)[-1] for p in referenced_files(t.store)}
    assert want and want <= found

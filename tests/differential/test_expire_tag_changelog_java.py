"""A tag keeps its snapshot's data through expiry, not its changelog: the same in both engines.

Java 0.9's expiry deletes an expired snapshot's changelog files and manifests, and its skipping
set (``FileDeletionBase.manifestSkippingSet``) holds a tag's base and delta lists only, so the
tagged snapshot's changelog list goes too. Ours kept that list while deleting the manifests it
names (found on S3 by tests/reliability/test_s3_table_kinds.py): a list naming deleted files.
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
RETAIN_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}


def _tag_lists(lake: Catalog, name: str) -> dict[str, bool]:
    t = lake.get_table(name)
    tag = t.tags()["keep"]
    lists = {"base": tag.base_manifest_list, "delta": tag.delta_manifest_list,
             "changelog": tag.changelog_manifest_list}
    assert all(lists.values())  # the tagged snapshot has a changelog (changelog-producer = input)
    return {what: t.file_io.exists(t.paths.manifest_file(n)) for what, n in lists.items()}


def test_a_tag_keeps_its_data_lists_not_its_changelog_list(java: PaimonJava, wh: str, lake: Catalog) -> None:
    for name in ("db.j", "db.l"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"],
                          options={"bucket": "1", "write-only": "true", "changelog-producer": "input"})
        for k in range(3):
            java.write(wh, name, pa.table({"id": pa.array([k, 100], pa.int64()), "v": [str(k), str(k)]}))
        java.create_tag(wh, name, "keep", snapshot_id=2)
    java.expire_snapshots(wh, "db.j", options=RETAIN_ONE)
    ours = lake.get_table("db.l")
    assert ours.expire_snapshots(retain_min=1, retain_max=1).expired_snapshots == [1, 2]
    assert [s["id"] for s in java.snapshots(wh, "db.j")] == [s["id"] for s in java.snapshots(wh, "db.l")] == [3]
    assert _tag_lists(lake, "db.l") == _tag_lists(lake, "db.j") == {"base": True, "delta": True, "changelog": False}
    # the tag still reads, in both engines' view of our table
    assert sorted(r["id"] for r in ours.refresh().to_arrow(tag="keep").to_pylist()) == [0, 1, 100]

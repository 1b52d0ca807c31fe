"""A rescale writes no changelog, as Paimon HEAD's (``SparkPostponeStagedCommitter``'s
``rescaleWriteBuilder`` copies the table with ``changelog-producer = none``): its rows are the
partition's rows as they were, not a change. With ``changelog-producer = input`` our rescale
used to write the merged rows as changelog files too, which its OVERWRITE then deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets
from lake_assets.ops.rescale import rescale_partitions
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def _changelog_files(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names
            if n.startswith("changelog-") and not d.endswith("changelog")}


def test_rescale_of_an_input_changelog_table_never_writes_a_changelog_file(catalog: Catalog, warehouse: str) -> None:
    t = catalog.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "1",
                                      "changelog-producer": "input"})
    write_fixed_buckets(t.store, pa.table({"k": list(range(6)), "dt": ["d1"] * 6, "v": list("abcdef")},
                                          schema=SCHEMA))
    root = Path(warehouse) / "db.db" / "p"
    before = _changelog_files(root)
    assert before  # the batch write itself produced its input as changelog
    seen: list[set[str]] = []
    store = t.refresh().store
    # at every step of the rescale (each bucket's flush, each step of its commit): no new changelog file
    store.fault_hook = lambda step: seen.append(_changelog_files(root) - before)
    sid = rescale_partitions(store, {serialize_row(["d1"], store.schema.types(["dt"])): 4})
    assert sid is not None and store.snapshot_manager.snapshot(sid).commit_kind == CommitKind.OVERWRITE
    assert seen  # the hook was told the steps
    assert all(not s for s in seen), seen
    assert _changelog_files(root) == before
    assert store.snapshot_manager.snapshot(sid).changelog_manifest_list in (None, "")
    data = t.refresh().to_arrow()
    assert sorted(data.column("v").to_pylist()) == list("abcdef")

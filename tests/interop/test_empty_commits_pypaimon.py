"""``snapshot.ignore-empty-commit = false`` against pypaimon 2.1, which honours it as Paimon 1.x's
batch commits do (``FileStoreCommit.commit``: an empty message list commits when the option is
false): a batch commit with no rows makes an APPEND snapshot with no files on both sides, each
reads the other's table across it, and with the option unset neither commits one."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
ROWS = pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA)


@pytest.mark.parametrize("ignore", ["false", None])
def test_empty_batch_commits_agree_with_pypaimon(pypaimon, tmp_warehouse: str, ignore: str | None) -> None:
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    options = {"bucket": "1"} | ({"snapshot.ignore-empty-commit": ignore} if ignore else {})
    for name in ("db.theirs", "db.ours"):
        cat.create_table(name, SCHEMA, primary_keys=["k"], options=options)
    pypaimon.write(tmp_warehouse, "db.theirs", ROWS)
    pypaimon.write(tmp_warehouse, "db.theirs", SCHEMA.empty_table())
    ours = cat.get_table("db.ours")
    ours.write_arrow(ROWS)
    ours.write_arrow(SCHEMA.empty_table())
    expected = 2 if ignore == "false" else 1
    for name in ("db.theirs", "db.ours"):
        t = cat.get_table(name)
        assert pypaimon.snapshots(tmp_warehouse, name)["snapshots"] == list(range(1, expected + 1))
        if expected == 2:
            snap, first = t.snapshot(2), t.snapshot(1)
            assert (snap.commit_kind, snap.commit_identifier) == (CommitKind.APPEND, BATCH_COMMIT_IDENTIFIER)
            assert (snap.delta_record_count, snap.total_record_count) == (0, first.total_record_count)
            assert t.store.manifest_io().read_manifest_list(snap.delta_manifest_list) == []
        # both read both tables, at the empty snapshot too
        for sid in (None, expected):
            assert pypaimon.read(tmp_warehouse, name, snapshot_id=sid).sort_by("k").to_pylist() == ROWS.to_pylist()
            assert t.to_arrow(snapshot_id=sid).sort_by("k").to_pylist() == ROWS.to_pylist()

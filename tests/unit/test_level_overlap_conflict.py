"""The committer's check that no level >= 1 of a bucket ends up with overlapping key ranges."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError
from lake_assets.ops.commit_message import CommitMessage


def test_overlapping_files_in_one_level_are_a_conflict(catalog: Catalog) -> None:
    """The committer orders a level's files by key (functools.cmp_to_key over compare_keys) and
    refuses a commit that would leave two of them overlapping."""
    t = catalog.create_table("db.levels", pa.schema([("k", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "num-levels": "3"})
    t.write_arrow(pa.table({"k": [10, 20, 30]}))
    t.compact(full=True)  # one file at the top level, keys 10..30
    t.write_arrow(pa.table({"k": [5, 25]}))  # a level-0 file, keys 5..25
    split = t.plan()[0]
    top = [f for f in split.files if f.level == 2]
    (l0,) = [f for f in split.files if f.level == 0]
    assert top and top[0].min_key != l0.min_key
    upgrade = CommitMessage(split.partition, split.bucket, 1, compact_before=(l0,), compact_after=(l0.upgrade(2),))
    committer = t.new_committer("overlap")
    try:
        committer.commit([upgrade], commit_identifier=1)
    except CommitConflictError as exc:
        assert "overlapping files" in str(exc) and l0.file_name in str(exc)
    else:
        raise AssertionError("an overlapping upgrade was committed")

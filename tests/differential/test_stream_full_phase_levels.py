"""The full phase of a stream on a table with a changelog producer reads only the levels whose
changelog is already out (Paimon Java's ``DataTableStreamScan.tryFirstPlan``, 0.9 as today):
``lookup`` levels above 0, ``full-compaction`` the top level. Rows still at level 0 (a write-only
writer's, or a postpone table's batch write into real buckets) come once, with the changelog of
the compaction that lifts them, not also in the full phase."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def changes(table: pa.Table) -> list[tuple[str, int, str]]:
    return sorted(zip(table.column("_row_kind").to_pylist(), table.column("id").to_pylist(),
                      table.column("v").to_pylist(), strict=True))


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_full_phase_skips_levels_whose_changelog_is_still_to_come(java: PaimonJava, wh: str, lake: Catalog,
                                                                  producer: str) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"],
                          options={"bucket": "1", "changelog-producer": producer, "write-only": "true"})
    t.write_arrow(rows([1, 2], "a"))
    t.compact(full=True)                   # to the top level, with its changelog
    t.write_arrow(rows([2, 3], "b"))       # write-only: level 0, no changelog yet
    theirs = java.stream(wh, "db.t", options={"scan.mode": "latest-full"})
    ours = t.stream(mode="latest-full")
    reader = t.change_reader()
    [full] = ours.poll(max_snapshots=1)
    mine = pa.concat_tables([reader.read(s) for s in full.splits])
    assert changes(mine) == changes(theirs.next()) == [("+I", 1, "a1"), ("+I", 2, "a2")]
    t.compact(full=True)
    after = [reader.read(s) for b in ours.poll(max_snapshots=10) for s in b.splits]
    expected = [("+I", 3, "b3"), ("+U", 2, "b2"), ("-U", 2, "a2")]
    assert changes(pa.concat_tables(after)) == expected
    java_after = [theirs.next() for _ in range(3)]
    assert changes(pa.concat_tables([b.select(["id", "v", "_row_kind"]) for b in java_after])) == expected
    theirs.close()

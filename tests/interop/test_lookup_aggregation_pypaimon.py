"""pypaimon 2.1 on an aggregation table with ``changelog-producer = lookup``: an engine limitation.

A lookup compaction writes a key's merged row (its level-0 records merged with its row looked up
above the output level) one level above its older rows, which stay; Paimon's readers then take a
key's level-0 records plus only its newest row above level 0 (``LookupMergeFunction``, 0.9 to
HEAD; lake_assets' lsm/lookup_merge.py). pypaimon 2.1 has no such function: its merge reader
folds every row of the key, old ones included, so a non-idempotent aggregate counts the old row
twice until a full compaction leaves one row per key. Pinned here so that a pypaimon release that
fixes it shows up (docs/format.md says so)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog

from .paimon import Pypaimon

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64())])


def test_pypaimon_double_counts_a_lookup_compacted_sum(pypaimon: Pypaimon, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
        "changelog-producer": "lookup"})
    # each commit's lookup compaction puts key 2's merged row above its old one
    for rows in ([(1, 1), (2, 1)], [(1, 1), (2, 1)], [(2, 3)]):
        table.write_arrow(pa.Table.from_pylist([{"k": k, "a": a} for k, a in rows], schema=SCHEMA))
    levels = sorted(f.level for sp in table.plan() for f in sp.files)
    assert len(set(levels)) > 1, levels  # a key's rows in several levels: the case at hand

    def theirs() -> dict[int, int]:
        return {r["k"]: r["a"] for r in pypaimon.read(wh, "db.t").to_pylist()}

    ours = {r["k"]: r["a"] for r in table.to_arrow().to_pylist()}
    assert ours == {1: 2, 2: 5}  # as Java reads it (tests/differential/test_lookup_merge_java.py)
    got = theirs()
    # pypaimon 2.1 sums every level's row of a key: key 1's first row (level 5) and its merged row
    # (1 + 1, level 4); key 2's rows 1, 1 + 1 and 1 + 1 + 3 (levels 5, 4, 3)
    assert levels == [3, 4, 5] and got == {1: 1 + 2, 2: 1 + 2 + 5}, (levels, got)
    table.compact(full=True)  # one row per key: every reader agrees again
    assert theirs() == ours == {r["k"]: r["a"] for r in table.to_arrow().to_pylist()}

"""pypaimon 2.1 and pypaimon-rust 0.4 on lookup-compacted aggregation tables: engine limitations,
pinned so that a release that changes them shows up.

A lookup compaction writes a key's merged row (its level-0 records merged with its row looked up
above) one level above its older rows; Paimon's readers take a key's level-0 records plus only its
newest row above level 0 (``LookupMergeFunction``), and with deletion vectors the older rows are
marked deleted instead (ops/dv_old_values.py), so a reader that applies the vectors needs no
merge at all. Two tables, written and compacted by lake_assets, read by each engine:
``changelog-producer = lookup`` alone, and with ``deletion-vectors.enabled``. The rows each
engine returns are pinned exactly (docs/format.md §10.3), and after a full compaction (one row per
key) pypaimon reads the lookup table as Java does again."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog

from .paimon import Pypaimon, PypaimonRust

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.int64()), ("c", pa.int64())])
BASE = {"bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
        "fields.c.aggregate-function": "max", "changelog-producer": "lookup"}
TABLES = {"t_lookup": BASE, "t_dv": {**BASE, "deletion-vectors.enabled": "true"}}
# each commit's lookup compaction merges the key's row above into the row it writes
COMMITS = ([(1, 1, 5), (2, 1, 5)], [(1, 1, 3), (2, 1, 3)], [(2, 3, 9)])
MERGED = [(1, 2, 5), (2, 5, 9)]  # what Java reads (tests/differential/test_lookup_merge_java.py)


def _sorted(rows: list[dict]) -> list[tuple]:
    return sorted((r["k"], r["a"], r["c"]) for r in rows)


def _tables(wh: str) -> Catalog:
    catalog = Catalog(wh)
    catalog.create_database("db")
    for name, options in TABLES.items():
        table = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], options=options)
        for rows in COMMITS:
            table.write_arrow(pa.Table.from_pylist([{"k": k, "a": a, "c": c} for k, a, c in rows], schema=SCHEMA))
        assert _sorted(table.to_arrow().to_pylist()) == MERGED
    return catalog


def test_pypaimon_and_rust_on_lookup_compacted_aggregation(pypaimon: Pypaimon, rust: PypaimonRust,
                                                           tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    catalog = _tables(wh)
    levels = {n: sorted(f.level for sp in catalog.get_table(f"db.{n}").plan() for f in sp.files) for n in TABLES}
    # one subprocess for pypaimon-rust (both tables in one query), one read per table for pypaimon
    theirs_rust = rust.query(wh, "SELECT 'lookup' AS t, k, a, c FROM paimon.db.t_lookup UNION ALL "
                                 "SELECT 'dv' AS t, k, a, c FROM paimon.db.t_dv")
    theirs_py = {n: _sorted(pypaimon.read(wh, f"db.{n}").to_pylist()) for n in TABLES}
    got_rust = {n: _sorted([r for r in theirs_rust if r["t"] == t])
                for n, t in (("t_lookup", "lookup"), ("t_dv", "dv"))}
    assert levels == {"t_lookup": [3, 4, 5], "t_dv": [3, 4]}  # keys in several levels: the case at hand
    # lookup alone: both fold every level's row of a key, so the sum counts old rows again (key 1:
    # its level-5 row 1 and merged row 1 + 1; key 2: 1, 1 + 1 and 1 + 1 + 3); max is idempotent
    double_counted = [(1, 1 + 2, 5), (2, 1 + 2 + 5, 9)]
    # with deletion vectors: both apply them, and the older rows they mark are gone
    expected = {"t_lookup": double_counted, "t_dv": MERGED}
    assert theirs_py == expected, theirs_py
    assert got_rust == expected, got_rust
    catalog.get_table("db.t_lookup").compact(full=True)  # one row per key: every reader agrees again
    assert _sorted(catalog.get_table("db.t_lookup").to_arrow().to_pylist()) == MERGED
    assert _sorted(pypaimon.read(wh, "db.t_lookup").to_pylist()) == MERGED

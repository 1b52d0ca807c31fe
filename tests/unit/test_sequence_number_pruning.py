"""``_SEQUENCE_NUMBER`` filters prune files and data-evolution row-id ranges (`ops/row_range_prune.py`):
by the one value a file or range gives its rows, or for a file storing per-row values (a compacted
row-tracking file) by their stats, as ``_ROW_ID`` there; the rows read equal the unfiltered read filtered."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
COLUMNS = ["id", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]
TERMS = [("=", 1), ("=", 2), (">=", 3), ("<", 2), ("in", [4, 5]), ("!=", 5)]


def _check(t, expected_files: dict[tuple[str, object], int]) -> None:
    whole = t.to_arrow(columns=COLUMNS)
    for op, lit in TERMS:
        term = ("_SEQUENCE_NUMBER", op, lit)
        seq = whole.column("_SEQUENCE_NUMBER")
        value = pa.array(lit) if op == "in" else pa.scalar(lit, pa.int64())
        mask = {"=": pc.equal, ">=": pc.greater_equal, "<": pc.less, "!=": pc.not_equal,
                "in": lambda a, b: pc.is_in(a, value_set=b)}[op](seq, value)
        want = whole.filter(mask).sort_by("_ROW_ID").to_pylist()
        assert t.to_arrow(columns=COLUMNS, filter=[term]).sort_by("_ROW_ID").to_pylist() == want, term
        assert sum(len(s.files) for s in t.plan(filter=[term])) == expected_files[(op, str(lit))], term


def test_sequence_filters_prune_row_tracking_files_but_not_stored_values(catalog: Catalog) -> None:
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true", "bucket": "-1",
                                                      "compaction.min.file-num": "2"})
    for i in range(2):  # snapshots 1, 2, compacted (snapshot 3) into one file storing 1 and 2 per row
        t.write_arrow(pa.table({"id": [2 * i, 2 * i + 1], "v": ["a", "b"]}, schema=SCHEMA))
    t.compact()
    for i in range(2, 4):  # snapshots 4, 5: one file each
        t.write_arrow(pa.table({"id": [2 * i, 2 * i + 1], "v": ["a", "b"]}, schema=SCHEMA))
    # the compacted file is pruned by its stored column's stats [1, 2]; the others by their one value
    _check(t, {("=", "1"): 1, ("=", "2"): 1, (">=", "3"): 2, ("<", "2"): 1, ("in", "[4, 5]"): 2, ("!=", "5"): 2})
    # _ROW_ID: the compacted file's stored ids (0-3) prune by their stats
    for term, files, ids in [(("_ROW_ID", ">=", 4), 2, [4, 5, 6, 7]), (("_ROW_ID", "<", 2), 1, [0, 1]),
                             (("_ROW_ID", "in", [3, 4]), 2, [3, 4])]:
        assert sum(len(s.files) for s in t.plan(filter=[term])) == files, term
        assert sorted(t.to_arrow(columns=["_ROW_ID"], filter=[term]).column("_ROW_ID").to_pylist()) == ids, term


def test_sequence_filters_prune_whole_data_evolution_ranges_by_their_newest_file(catalog: Catalog) -> None:
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.de", SCHEMA, options={"row-tracking.enabled": "true", "bucket": "-1",
                                                      "data-evolution.enabled": "true"})
    for i in range(3):  # snapshots 1-3: ranges [0, 1], [2, 3], [4, 5]
        t.write_arrow(pa.table({"id": [2 * i, 2 * i + 1], "v": ["a", "b"]}, schema=SCHEMA))
    t.update_columns(pa.table({"_ROW_ID": pa.array([2], pa.int64()), "v": ["B"]}))  # range [2, 3] is now 4
    _check(t, {("=", "1"): 1, ("=", "2"): 0, (">=", "3"): 3, ("<", "2"): 1, ("in", "[4, 5]"): 2, ("!=", "5"): 4})

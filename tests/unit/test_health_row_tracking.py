"""`Table.health()` of data-evolution and row-tracking tables, each number checked against the
table as read (rows), its live files (files, small files, deleted rows) and what a compaction then
does (the trigger): column updates, compactions and deletes, table-driven, core-written."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.ops.compact.data_evolution_compact import plan_groups
from lake_assets.spec.manifest import DataFileMeta

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
TRACKED = {"row-tracking.enabled": "true", "compaction.min.file-num": "2"}
EVOLVING = {**TRACKED, "data-evolution.enabled": "true"}
LSM = ("level0_file_count", "sorted_runs", "size_amplification_percent", "oldest_level0_age_ms")


def rows(ids: list[int], p: str) -> pa.Table:
    return pa.table({"id": ids, "p": [p] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def update(t: Table, row_ids: list[int], tag: str) -> None:
    t.update_columns(pa.table({"_ROW_ID": pa.array(row_ids, pa.int64()), "v": [f"{tag}{i}" for i in row_ids]}))


def writes(t: Table) -> None:
    t.write_arrow(rows([1, 2, 3], "a"))
    t.write_arrow(rows([4, 5], "b"))
    t.write_arrow(rows([6, 7], "a"))


def de_updates(t: Table) -> None:
    writes(t)
    update(t, [0, 1, 2], "u")  # the whole first range of a
    update(t, [3], "w")  # part of b's range: the update covers its whole range


def de_compacted_then_updated(t: Table) -> None:
    de_updates(t)
    t.compact()
    update(t, [5, 6], "x")
    t.write_arrow(rows([8], "b"))


def rt_deletes(t: Table) -> None:
    writes(t)
    t.delete_where([("id", "in", [2, 6])])


def rt_compacted(t: Table) -> None:
    writes(t)
    t.compact(full=True)
    t.write_arrow(rows([9], "b"))


CASES: dict[str, tuple[dict[str, str], Callable[[Table], None]]] = {
    "data evolution, column updates": (EVOLVING, de_updates),
    "data evolution, compacted, updated again": (EVOLVING, de_compacted_then_updated),
    "data evolution, updates, min-file-num over the ranges": (
        {**EVOLVING, "compaction.min.file-num": "9"}, de_updates),
    "row tracking, deletion vectors, deletes": ({**TRACKED, "deletion-vectors.enabled": "true"}, rt_deletes),
    "row tracking, compacted": (TRACKED, rt_compacted),
}


def live(t: Table) -> list[tuple[str, DataFileMeta]]:
    return [(t.store.partition_path_of(e.partition), e.file)
            for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]


def small_files_by_range(files: list[DataFileMeta], threshold: int) -> int:
    """Files of row-id ranges smaller together than the threshold (a range's files share its first id)."""
    ranges: dict[int | None, list[DataFileMeta]] = {}
    for f in files:
        ranges.setdefault(f.first_row_id, []).append(f)
    return sum(len(g) for g in ranges.values() if sum(f.file_size for f in g) < threshold)


@pytest.mark.parametrize("case", list(CASES))
def test_health_numbers_are_what_the_table_holds(tmp_path: Path, case: str) -> None:
    options, steps = CASES[case]
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options=options)
    steps(t)
    evolving = "data-evolution.enabled" in options
    health = t.health(small_file_threshold=1200).to_pylist()
    by_partition = {r["partition"]: r for r in health}
    assert [r["bucket"] for r in health] == [0] * len(health)  # bucket -1 tables: one bucket per partition

    read = Counter(f"p={p}" for p in t.to_arrow().column("p").to_pylist())
    files = live(t)
    assert {p: r["row_count"] for p, r in by_partition.items()} == dict(read)
    assert {p: r["file_count"] for p, r in by_partition.items()} == dict(Counter(p for p, _ in files))
    assert {p: r["total_bytes"] for p, r in by_partition.items()} == {
        p: sum(f.file_size for q, f in files if q == p) for p in by_partition}
    for r in health:
        assert all(r[c] is None for c in LSM), r  # no LSM levels
        mine = [f for p, f in files if p == r["partition"]]
        stored = sum(f.row_count for f in mine)
        if evolving:  # no deletion vectors; small files counted by row-id range
            assert (r["deletion_vector_rows"], r["deleted_row_ratio"]) == (0, 0.0)
            assert r["small_file_count"] == small_files_by_range(mine, 1200)
        else:  # every stored row not read is one a deletion vector hides
            hidden = stored - read[r["partition"]]
            assert r["deletion_vector_rows"] == hidden
            assert r["deleted_row_ratio"] == pytest.approx(hidden / stored)
            assert r["small_file_count"] == sum(1 for f in mine if f.file_size < 1200)
        assert r["delete_row_count"] == 0
    if evolving:
        assert sum(f.row_count for _, f in files) > sum(read.values())  # updates hold rows counted once

    # the trigger is what a compaction does: it rewrites files exactly where the trigger says
    triggered = {p for p, r in by_partition.items() if r["compaction_would_trigger"]}
    before = {p: sorted(f.file_name for q, f in files if q == p) for p in by_partition}
    t.compact()
    after = {p: sorted(f.file_name for q, f in live(t) if q == p) for p in by_partition}
    assert {p for p in by_partition if before[p] != after[p]} == triggered
    if case.startswith("data evolution, updates, min"):
        assert triggered == set()
    else:
        assert triggered
    assert Counter(f"p={p}" for p in t.to_arrow().column("p").to_pylist()) == read


def test_data_evolution_trigger_is_the_planner(tmp_path: Path) -> None:
    """A small range alone in its stretch (row ids of other partitions between) is not compacted
    under compaction.min.file-num: not a trigger, though its files are small."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={**EVOLVING, "compaction.min.file-num": "3"})
    t.write_arrow(rows([1, 2], "a"))
    t.write_arrow(rows([3], "b"))
    t.write_arrow(rows([4], "a"))  # apart from a's first range: row id 2 is b's
    update(t, [0, 1], "u")
    [a] = [r for r in t.health().to_pylist() if r["partition"] == "p=a"]
    files = [f for p, f in live(t) if p == "p=a"]
    assert (a["file_count"], a["small_file_count"], a["row_count"]) == (3, 3, 3)
    assert a["compaction_would_trigger"] is False
    assert plan_groups(files, t.store.schema.core_options, "db.t") == []

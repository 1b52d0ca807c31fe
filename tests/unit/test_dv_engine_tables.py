"""Deletion-vector tables of partial-update, aggregation and sequence.field in lake_assets alone:
the old-value merge of their compaction (ops/dv_old_values.py), its lookup changelog, and the
maintenance operations they share with deduplicate DV tables (expiry, tags, rollback, orphans,
health). Java 0.9 checks the same engines both ways in tests/differential/test_dv_engines_java.py.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("a", pa.int64()), ("b", pa.string())])


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _rows(keys, a=None, b=None, p: str = "x") -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "p": [p] * len(keys), "a": [a] * len(keys), "b": [b] * len(keys)}, schema=SCHEMA)


def _state(table) -> dict[tuple[int, str], tuple]:
    return {(r["k"], r["p"]): (r["a"], r["b"]) for r in table.to_arrow().to_pylist()}


def _deleted(table) -> int:
    loader = VectorLoader(table.store)
    return sum(len(v) for es in snapshot_index(table.store, table.latest_snapshot()).values()
               for v in loader.vectors(es).values())


def test_partial_update_with_lookup_changelog_and_maintenance(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "partial-update",
        "changelog-producer": "lookup", "snapshot.num-retained.min": "1"})
    table.write_arrow(pa.concat_tables([_rows(range(20), a=1), _rows(range(5), a=7, p="y")]))
    first = table.latest_snapshot().id
    table.write_arrow(_rows(range(0, 20, 2), b="u"))  # partial: a stays, b set
    table.create_tag("t1")
    tagged = _state(table)
    assert tagged[(4, "x")] == (1, "u") and tagged[(5, "x")] == (1, None)
    # the writer's inline compaction merged the old rows in and marked them: 10 rows deleted
    assert _deleted(table) == 10
    assert sum(r["deletion_vector_rows"] for r in table.health().to_pylist()) == 10
    # its changelog: -U/+U from the looked-up old row, as Paimon's lookup wrapper writes them
    changes = table.read_changes(first, table.latest_snapshot().id)
    pairs = sorted((r["k"], r["_row_kind"], r["b"]) for r in changes.to_pylist())
    assert pairs[:2] == [(0, "+U", "u"), (0, "-U", None)] and len(pairs) == 20
    table.write_arrow(_rows(range(5), a=2, p="y"))
    table.write_arrow(_rows([1, 3], b="v"))
    table.write_arrow(_rows([1, 3], b="w"))  # the vectors of the write before are no snapshot's now
    latest = _state(table)
    assert latest[(1, "x")] == (1, "w") and latest[(0, "y")] == (2, None)
    table.expire_snapshots(retain_max=1, older_than=timedelta(0))
    # the index files left are those of the latest snapshot and of the tag's
    kept = _index_names(table, table.latest_snapshot()) | _index_names(table, table.tags()["t1"])
    assert set(os.listdir(table.store.paths.root + "/index")) == kept
    assert _state(table) == latest and _state_at(table, "t1") == tagged
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []
    table.rollback_to(tag="t1")
    assert _state(table) == tagged
    table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert _state(table) == tagged
    table.write_arrow(_rows([5], b="after-rollback"))
    assert _state(table)[(5, "x")] == (1, "after-rollback")


def _index_names(table, snapshot) -> set[str]:
    return {e.file_name for es in snapshot_index(table.store, snapshot).values() for e in es}


def _state_at(table, tag: str) -> dict[tuple[int, str], tuple]:
    return {(r["k"], r["p"]): (r["a"], r["b"]) for r in table.to_arrow(tag=tag).to_pylist()}


def test_aggregation_sums_the_old_row_once(catalog: Catalog) -> None:
    """A key's old row above is merged in and deleted, never summed twice (write-only writes, then
    dedicated compactions into a level below the old row)."""
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": "aggregation",
        "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_non_null_value",
        "write-only": "true"})
    table.write_arrow(_rows(range(10), a=1, b="x"))
    table.compact(full=True)
    for i in range(3):
        table.write_arrow(_rows(range(0, 10, 2), a=10))
        table.compact()
        assert {k: v for (k, _), v in _state(table).items()} == {
            k: (1 + 10 * (i + 1) if k % 2 == 0 else 1, "x") for k in range(10)}
    levels = {f.level for s in table.plan() for f in s.files}
    assert len(levels) > 1, "every round went to the top level: nothing was looked up above"


def test_sequence_field_keeps_the_newer_old_row(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "sequence.field": "a"})
    table.write_arrow(_rows(range(6), a=5, b="old"))
    table.write_arrow(pa.concat_tables([_rows([0, 1], a=3, b="older"), _rows([2, 3], a=9, b="newer")]))
    state = {k: v for (k, _), v in _state(table).items()}
    assert state == {0: (5, "old"), 1: (5, "old"), 2: (9, "newer"), 3: (9, "newer"), 4: (5, "old"), 5: (5, "old")}
    # both old rows of the four keys were marked (the winners were rewritten below them)
    assert _deleted(table) == 4


@pytest.mark.parametrize(("options", "reason"), [
    ({"merge-engine": "first-row"}, "First row merge engine does not need deletion vectors"),
    ({"changelog-producer": "full-compaction"}, "only supported for NONE/INPUT/LOOKUP"),
])
def test_what_paimon_refuses_is_refused_at_create_and_alter(catalog: Catalog, options: dict[str, str],
                                                             reason: str) -> None:
    with pytest.raises(LakeError, match=reason):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", **options})
    if "changelog-producer" in options:  # merge-engine is immutable: only the producer can be altered
        table = catalog.create_table("db.u", SCHEMA, primary_keys=["k", "p"],
                                     options={"bucket": "1", "deletion-vectors.enabled": "true"})
        with pytest.raises(LakeError, match=reason):
            table.update_schema().set_option("changelog-producer", options["changelog-producer"]).commit()

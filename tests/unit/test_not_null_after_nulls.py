"""A column made NOT NULL after files holding nulls in it were written (`lake_assets.ops.not_null_history`).

Java 0.9 lets ``ALTER COLUMN v SET NOT NULL`` through whatever the table holds (lake_assets refuses
it; the tables here get the schema Java's change writes). Every read path returns the old nulls as
nulls, with ``v`` nullable in its schema (Java's reads return them: a row's ``isNullAt`` stays
true), and never pyarrow's "schemas differ" / "non-nullable" errors; a compaction that would
write such a null into a new file fails with `InvalidDataError` naming the column and the file,
and changes nothing (Java 0.9's writes a file it cannot read:
`tests/differential/test_not_null_after_nulls_java.py`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, SchemaError
from lake_assets.ops.not_null_history import read_arrow_schema, relaxed_columns

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("w", pa.string())])
STRICT = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64(), nullable=False),
                    ("w", pa.string())])
KINDS = {
    "append": ([], {"bucket": "-1"}),
    "primary-key": (["k"], {"bucket": "1"}),
    "deletion-vectors": (["k"], {"bucket": "1", "deletion-vectors.enabled": "true"}),
    "partial-update": (["k"], {"bucket": "1", "merge-engine": "partial-update"}),
    "aggregation-vectors": (["k"], {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                                    "deletion-vectors.enabled": "true"}),
}


def set_not_null(t, column: str):  # type: ignore[no-untyped-def]
    """The schema Java 0.9's ``updateColumnNullability(column, false)`` commits: the next id,
    the column's type NOT NULL, nothing else changed."""
    s = t.store.schema_by_id(t.schema.id)
    fields = [dataclasses.replace(f, type=f.type.copy(nullable=False)) if f.name == column else f for f in s.fields]
    Path(t.store.paths.schema_file(s.id + 1)).write_text(dataclasses.replace(s, id=s.id + 1, fields=tuple(fields))
                                                          .to_json())


def _table(tmp: Path, kind: str):  # type: ignore[no-untyped-def]
    """Rows 1..3 with a null v (k=2) written, v made NOT NULL, rows 4..5 written after."""
    pk, options = KINDS[kind]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=pk, options=options)
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": [10, None, 30], "w": ["a", "b", None]}, schema=SCHEMA))
    set_not_null(t, "v")
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"k": [4, 5], "v": [40, 50], "w": ["d", "e"]}, schema=STRICT))
    return t


EXPECTED = [{"k": 1, "v": 10, "w": "a"}, {"k": 2, "v": None, "w": "b"}, {"k": 3, "v": 30, "w": None},
            {"k": 4, "v": 40, "w": "d"}, {"k": 5, "v": 50, "w": "e"}]


def test_our_schema_change_still_refuses_set_not_null(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(SchemaError, match="to NOT NULL"):
        t.update_schema().update_column_nullability("v", False).commit()


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_read_path_returns_the_old_nulls(tmp_path: Path, kind: str) -> None:
    t = _table(tmp_path, kind)
    assert relaxed_columns(t.store, t.schema) == {"v"}  # w was always nullable, k is the key
    schema = read_arrow_schema(t.store, t.schema)
    assert schema.field("v").nullable and not schema.field("k").nullable
    assert not t.schema.field("v").type.nullable  # the table's schema says NOT NULL
    whole = t.to_arrow()
    assert whole.sort_by("k").to_pylist() == EXPECTED and whole.schema.field("v").nullable
    batches = list(t.to_batches(batch_size=2))
    assert {b.schema for b in batches} == {whole.schema}  # one schema for every batch
    assert sorted(r["k"] for b in batches for r in b.to_pylist()) == [1, 2, 3, 4, 5]
    assert t.to_arrow(filter=[("v", "is null")]).to_pylist() == [EXPECTED[1]]
    assert t.to_arrow(filter=[("v", ">", 20)]).sort_by("k").column("k").to_pylist() == [3, 4, 5]
    changes = t.read_changes(start=0, end=t.snapshot_manager.latest_id())
    assert sorted(changes.column("k").to_pylist()) == [1, 2, 3, 4, 5] and changes.schema.field("v").nullable
    stream = t.stream(mode="latest-full")
    reader = t.change_reader(stream=stream)
    streamed = [reader.read(s) for b in stream.poll(max_snapshots=10) for s in b.splits]
    assert sum(s.num_rows for s in streamed) == 5
    assert all(s.schema.field("v").nullable for s in streamed)
    if KINDS[kind][0] and kind != "partial-update":  # a diff of two tags' files: the old files hold the null
        # (partial-update refuses to merge the old null insert with a new row: `test_merge_not_null`)
        t.write_arrow(pa.table({"k": [2, 3], "v": [20, 33], "w": ["b", "c"]}, schema=STRICT))
        t.create_tag("one", snapshot_id=1)
        t.create_tag("now")
        diff = t.read_changes(start="one", end="now")
        assert diff.schema.field("v").nullable  # each changed key's new row (Paimon's diff gives +I)
        now = [(r["k"], r["v"]) for r in t.to_arrow().sort_by("k").to_pylist() if r["k"] > 1]
        assert sorted((r["k"], r["v"]) for r in diff.to_pylist()) == now
        assert now[0] == (2, 20)  # (aggregation: null + 20)
    if "vectors" not in kind:  # (a batch read of a vector table skips level 0 until compaction)
        assert t.to_arrow(snapshot_id=1).sort_by("k").to_pylist() == EXPECTED[:3]  # under schema-0


@pytest.mark.parametrize("kind", list(KINDS))
def test_compaction_refuses_to_write_an_old_null_naming_column_and_file(tmp_path: Path, kind: str) -> None:
    t = _table(tmp_path, kind)
    (old,) = [e.file.file_name for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
              if e.file.schema_id == 0]
    if not KINDS[kind][0]:  # an append table compacts several small files
        for k in range(6, 12):
            t.write_arrow(pa.table({"k": [k], "v": [k], "w": ["x"]}, schema=STRICT))
    latest = t.snapshot_manager.latest_id()
    files = sorted(p.name for p in (tmp_path / "wh").rglob("data-*"))
    with pytest.raises(InvalidDataError, match=f"column v became NOT NULL after {old} were written"):
        t.compact(full=True)
    assert t.snapshot_manager.latest_id() == latest  # nothing committed, nothing left behind
    assert sorted(p.name for p in (tmp_path / "wh").rglob("data-*")) == files
    assert t.to_arrow().sort_by("k").to_pylist()[:5] == EXPECTED


@pytest.mark.parametrize("kind", ["primary-key", "deletion-vectors", "aggregation-vectors"])
def test_compaction_works_once_the_nulls_are_overwritten(tmp_path: Path, kind: str) -> None:
    """The write merges the new row over the old one (aggregation: looked up through the deletion
    vectors' old values, null + 20); partial-update refuses to merge an insert holding a null in
    a NOT NULL column, as Paimon 1.1+ does (`test_merge_not_null`)."""
    t = _table(tmp_path, kind)
    t.write_arrow(pa.table({"k": [2], "v": [20], "w": ["bb"]}, schema=STRICT))
    t.compact(full=True)
    expected = [dict(r) for r in EXPECTED]
    expected[1] = {"k": 2, "v": 20, "w": "bb"}
    assert t.to_arrow().sort_by("k").to_pylist() == expected
    assert all(f.schema_id == 1 for f in (e.file for e in t.store.file_store_scan().live_entries(
        t.snapshot_manager.latest())))


def test_a_writer_never_puts_a_null_into_a_not_null_column(tmp_path: Path) -> None:
    t = _table(tmp_path, "append")
    with pytest.raises(InvalidDataError, match="'v' is NOT NULL"):
        t.write_arrow(pa.table({"k": [9], "v": [None], "w": ["x"]}, schema=SCHEMA))


def test_a_table_without_a_relaxed_column_reads_as_declared(tmp_path: Path) -> None:
    """A column NOT NULL from the start stays non-nullable in reads (no older schema had it nullable)."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", STRICT)
    t.write_arrow(pa.table({"k": [1], "v": [1], "w": ["a"]}, schema=STRICT))
    t.update_schema().add_column("x", pa.string()).commit()
    t = catalog.get_table("db.t")
    assert relaxed_columns(t.store, t.schema) == frozenset()
    assert not t.to_arrow().schema.field("v").nullable


@pytest.mark.parametrize("options", [{"changelog-producer": "lookup"},
                                     {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"}],
                         ids=["lookup", "lookup-vectors"])
def test_a_lookup_changelog_never_writes_the_old_null_as_before_image(tmp_path: Path, options: dict[str, str]) -> None:
    """Updating a key whose old row holds the null makes a -U image of it: refused, as a
    compaction's output is, and nothing lands (Java 0.9 would write an unreadable changelog)."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})
    t.write_arrow(pa.table({"k": [1, 2], "v": [10, None], "w": ["a", "b"]}, schema=SCHEMA))
    t.compact(full=True)
    set_not_null(t, "v")
    t = catalog.get_table("db.t")
    latest = t.snapshot_manager.latest_id()
    with pytest.raises(InvalidDataError, match="column v is NOT NULL but 1 of the rows to write are null"):
        t.write_arrow(pa.table({"k": [2], "v": [20], "w": ["bb"]}, schema=STRICT))
    assert t.snapshot_manager.latest_id() == latest
    t.write_arrow(pa.table({"k": [1], "v": [11], "w": ["a"]}, schema=STRICT))  # a key without a null: fine
    assert t.to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": 11, "w": "a"}, {"k": 2, "v": None, "w": "b"}]

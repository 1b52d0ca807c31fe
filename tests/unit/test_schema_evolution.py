"""Schema evolution: changes, their rejections, concurrent schema commits, and reading old files
(random evolutions against a model: test_schema_evolution_model.py)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitConflictError, OptionError, SchemaError, UnsupportedFeatureError
from lake_assets.ops.schema_change import (
    AddColumn,
    DropColumn,
    RenameColumn,
    SchemaUpdate,
    SetOption,
    UpdateColumnType,
    apply_changes,
)
from lake_assets.table import Table
from tests.conftest import rows

D = decimal.Decimal
SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("dt", pa.string()),
    ("name", pa.string()),
    ("qty", pa.int32()),
    ("price", pa.float32()),
    ("amount", pa.decimal128(10, 2)),
])


def _table(catalog: Catalog, name: str = "db.t", **kw: Any) -> Table:
    kw.setdefault("primary_keys", ["id", "dt"])
    kw.setdefault("partition_keys", ["dt"])
    kw.setdefault("options", {"bucket": "2"})
    return catalog.create_table(name, kw.pop("schema", SCHEMA), **kw)


def _write(t: Table, **cols: list) -> int | None:
    return t.write_arrow(pa.table(cols, schema=t.arrow_schema))


def _write_v0(t: Table) -> None:
    _write(t, id=[1, 2, 3], dt=["a", "a", "b"], name=["x", "y", None], qty=[10, None, 30],
           price=[1.5, 2.25, None], amount=[D("1.25"), None, D("-99999999.99")])


def _schema_files(t: Table) -> list[str]:
    return sorted(t.file_io.list_names(t.paths.schema_dir))


# --------------------------------------------------------------------------------------- add column
def test_add_column_old_rows_read_null_and_new_rows_have_values(catalog):
    t = _table(catalog)
    _write_v0(t)
    s = SchemaUpdate(t.store).add_column("note", pa.string(), comment="free text").commit()
    assert s.id == 1 and t.schema.id == 1
    note = s.field("note")
    assert (note.id, note.description, s.highest_field_id) == (6, "free text", 6)
    assert t.arrow_schema.names == [*SCHEMA.names, "note"]
    _write(t, id=[4, 1], dt=["b", "a"], name=["n", "x2"], qty=[4, 11], price=[4.0, 1.0],
           amount=[D("4.00"), D("1.00")], note=["new", "upd"])
    got = {(r["id"], r["dt"]): r for r in rows(t.to_arrow(), "dt", "id")}
    assert got[(2, "a")]["note"] is None and got[(3, "b")]["note"] is None
    assert got[(4, "b")]["note"] == "new"
    # an upsert of a key first written under schema 0 merges across the two schemas
    assert got[(1, "a")] == {"id": 1, "dt": "a", "name": "x2", "qty": 11, "price": 1.0,
                             "amount": D("1.00"), "note": "upd"}
    # the schema file is what Paimon expects
    raw = json.loads(t.file_io.read_bytes(t.paths.schema_file(1)))
    assert raw["highestFieldId"] == 6 and raw["fields"][-1] == {
        "id": 6, "name": "note", "type": "STRING", "description": "free text"}
    assert _schema_files(t) == ["schema-0", "schema-1"]


def test_add_nested_row_column_consumes_ids_pre_order(catalog):
    t = _table(catalog)
    _write_v0(t)
    struct = pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))])
    s = SchemaUpdate(t.store).add_column("nested", struct, position="first").add_column("z", pa.int8()).commit()
    nested = s.field("nested")
    assert nested.id == 6
    assert [f.id for f in nested.type.fields] == [7, 8]
    assert nested.type.fields[1].type.fields[0].id == 9
    assert s.field("z").id == 10 and s.highest_field_id == 10
    assert s.field_names[0] == "nested"
    _write(t, nested=[{"a": 1, "b": {"c": "q"}}], id=[9], dt=["a"], name=["n"], qty=[1], price=[1.0],
           amount=[D("1.00")], z=[3])
    got = {r["id"]: r for r in t.to_arrow().to_pylist()}
    assert got[9]["nested"] == {"a": 1, "b": {"c": "q"}} and got[9]["z"] == 3
    assert got[1]["nested"] is None and got[1]["z"] is None


# ------------------------------------------------------------------------------------------ rename
def test_rename_value_and_primary_key_columns(catalog):
    t = _table(catalog)
    _write_v0(t)
    s = SchemaUpdate(t.store).rename_column("name", "title").rename_column("id", "key").commit()
    assert s.primary_keys == ("key", "dt")
    assert s.field("key").id == 0 and s.field("title").id == 2
    assert not s.field("key").type.nullable
    got = rows(t.to_arrow(), "dt", "key")
    assert [(r["key"], r["title"]) for r in got] == [(1, "x"), (2, "y"), (3, None)]
    # an upsert of an old key through the new names replaces the old row
    _write(t, key=[2], dt=["a"], title=["Y"], qty=[2], price=[2.0], amount=[D("2.00")])
    got = rows(t.to_arrow(), "dt", "key")
    assert [(r["key"], r["title"], r["qty"]) for r in got] == [(1, "x", 10), (2, "Y", 2), (3, None, 30)]
    # filters on the renamed key prune old files by their stats under the old name
    assert t.to_arrow(filter=[("key", "=", 1), ("dt", "=", "a")]).column("title").to_pylist() == ["x"]
    assert t.to_arrow(filter=[("title", "=", "x")]).column("key").to_pylist() == [1]
    # renaming back and forth is fine; the id stays
    s = SchemaUpdate(t.store).rename_column("title", "name").commit()
    assert s.field("name").id == 2
    assert rows(t.to_arrow(), "dt", "key")[1]["name"] == "Y"


# -------------------------------------------------------------------------------------------- drop
def test_drop_then_readd_same_name_gets_new_id_and_old_values_stay_gone(catalog):
    t = _table(catalog)
    _write_v0(t)
    s = SchemaUpdate(t.store).drop_column("qty").commit()
    assert "qty" not in s.field_names and s.highest_field_id == 5
    assert all("qty" not in r for r in t.to_arrow().to_pylist())
    s = SchemaUpdate(t.store).add_column("qty", pa.int32()).commit()
    assert s.field("qty").id == 6 and s.highest_field_id == 6
    assert t.to_arrow().column("qty").to_pylist() == [None, None, None]
    _write(t, id=[5], dt=["a"], name=["e"], price=[5.0], amount=[D("5.00")], qty=[55])
    assert sorted(t.to_arrow().column("qty").to_pylist(), key=str) == [55, None, None, None]


# ------------------------------------------------------------------------------------------- types
def test_widen_types_old_files_are_cast(catalog):
    t = _table(catalog)
    _write_v0(t)
    s = (SchemaUpdate(t.store).update_column_type("qty", pa.int64()).update_column_type("price", pa.float64())
         .update_column_type("amount", pa.decimal128(12, 2)).commit())
    assert [str(s.field(c).type) for c in ("qty", "price", "amount")] == ["BIGINT", "DOUBLE", "DECIMAL(12, 2)"]
    assert t.arrow_schema.field("qty").type == pa.int64()
    got = t.to_arrow()
    assert got.schema.field("amount").type == pa.decimal128(12, 2)
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert by_id[1]["qty"] == 10 and by_id[1]["price"] == 1.5 and by_id[3]["amount"] == D("-99999999.99")
    # new values use the wider range
    _write(t, id=[7], dt=["a"], name=["w"], qty=[2**40], price=[1e300], amount=[D("9999999999.99")])
    by_id = {r["id"]: r for r in t.to_arrow().to_pylist()}
    assert by_id[7]["qty"] == 2**40 and by_id[7]["price"] == 1e300 and by_id[7]["amount"] == D("9999999999.99")
    # decimal scale up with precision up by as much
    SchemaUpdate(t.store).update_column_type("amount", pa.decimal128(14, 4)).commit()
    assert {r["id"]: r["amount"] for r in t.to_arrow().to_pylist()}[1] == D("1.2500")


def test_widen_chains_and_type_text(catalog):
    schema = pa.schema([("k", pa.int32()), ("i8", pa.int8()), ("i16", pa.int16()), ("ts", pa.timestamp("ms")),
                        ("s", pa.string())])
    t = catalog.create_table("db.w", schema, primary_keys=["k"], options={"bucket": "1"})
    t0 = dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    _write(t, k=[1], i8=[-128], i16=[-32768], ts=[t0], s=["abc"])
    SchemaUpdate(t.store).update_column_type("i8", pa.int16()).update_column_type("ts", "TIMESTAMP(6)").commit()
    SchemaUpdate(t.store).update_column_type("i8", pa.int32()).update_column_type("i16", pa.float64()).commit()
    # retyping to the same type is accepted as no change
    s = SchemaUpdate(t.store).update_column_type("i8", pa.float64()).update_column_type("s", pa.large_string()).commit()
    assert [str(s.field(c).type) for c in ("i8", "i16", "ts")] == ["DOUBLE", "DOUBLE", "TIMESTAMP(6)"]
    assert t.to_arrow().to_pylist() == [{"k": 1, "i8": -128.0, "i16": -32768.0, "ts": t0, "s": "abc"}]
    assert t.arrow_schema.field("ts").type == pa.timestamp("us")


def test_varchar_and_char_length_up():
    from lake_assets.spec.schema import TableSchema
    from lake_assets.spec.types import CharType, DataField, IntType, VarCharType, string_type

    base = TableSchema(0, (DataField(0, "k", IntType(nullable=False)), DataField(1, "v", VarCharType(5)),
                           DataField(2, "c", CharType(3))), 2, primary_keys=("k",),
                       options={"bucket": "1", "file.format": "parquet"})
    s = apply_changes(base, [UpdateColumnType("v", "VARCHAR(10)"), UpdateColumnType("c", "VARCHAR(3)")],
                      table_name="db.x")
    assert (s.field("v").type, s.field("c").type) == (VarCharType(10), VarCharType(3))
    s = apply_changes(s, [UpdateColumnType("v", pa.string())], table_name="db.x")
    assert s.field("v").type == string_type()
    with pytest.raises(SchemaError, match=r"'v'.*STRING to VARCHAR\(10\)"):
        apply_changes(s, [UpdateColumnType("v", "VARCHAR(10)")], table_name="db.x")
    with pytest.raises(SchemaError, match=r"CHAR\(3\) to CHAR\(2\)"):
        apply_changes(base, [UpdateColumnType("c", "CHAR(2)")], table_name="db.x")
    with pytest.raises(SchemaError, match=r"VARCHAR\(5\) to CHAR\(9\)"):
        apply_changes(base, [UpdateColumnType("v", "CHAR(9)")], table_name="db.x")


def test_apply_changes_is_pure(catalog):
    t = _table(catalog)
    before = t.schema.to_json()
    s = apply_changes(t.schema, [AddColumn("n", pa.int32()), RenameColumn("name", "nm"), SetOption(
        "snapshot.num-retained.min", "3")], table_name=t.name)
    assert t.schema.to_json() == before and _schema_files(t) == ["schema-0"]
    assert s.id == 1 and s.time_millis >= t.schema.time_millis
    assert s.options["snapshot.num-retained.min"] == "3" and s.partition_keys == ("dt",)


# ------------------------------------------------------------------------------- order, comments
def test_move_columns(catalog):
    t = _table(catalog)
    _write_v0(t)
    SchemaUpdate(t.store).move_column("amount", "first").move_column("id", ("after", "name")).commit()
    assert t.arrow_schema.names == ["amount", "dt", "name", "id", "qty", "price"]
    SchemaUpdate(t.store).move_column("dt", "last").move_column("price", ("before", "amount")).commit()
    names = ["price", "amount", "name", "id", "qty", "dt"]
    got = t.to_arrow()
    assert got.schema.names == names
    assert rows(got, "dt", "id")[0] == {"price": 1.5, "amount": D("1.25"), "name": "x", "id": 1, "qty": 10,
                                        "dt": "a"}
    SchemaUpdate(t.store).add_column("mid", pa.int8(), position=("after", "price")).commit()
    assert t.arrow_schema.names[:3] == ["price", "mid", "amount"]


def test_comments_and_options(catalog):
    t = _table(catalog)
    s = (SchemaUpdate(t.store).update_comment("orders").update_column_comment("qty", "how many")
         .set_option("snapshot.num-retained.min", "2").commit())
    assert s.comment == "orders" and s.field("qty").description == "how many"
    assert t.schema.core_options.snapshot_num_retained_min == 2
    s = SchemaUpdate(t.store).update_comment(None).update_column_comment("qty", None).remove_option(
        "snapshot.num-retained.min").commit()
    assert s.comment is None and s.field("qty").description is None
    assert "snapshot.num-retained.min" not in s.options
    assert "comment" not in json.loads(t.file_io.read_bytes(t.paths.schema_file(2)))
    # setting an immutable option to its current value is no change
    SchemaUpdate(t.store).set_option("bucket", "2").commit()


def test_nullability_relaxed_but_not_tightened(catalog):
    t = catalog.create_table("db.n", pa.schema([pa.field("k", pa.int32()), pa.field("v", pa.int32(), False)]),
                             primary_keys=["k"], options={"bucket": "1"})
    s = SchemaUpdate(t.store).update_column_nullability("v", True).commit()
    assert s.field("v").type.nullable
    _write(t, k=[1], v=[None])
    assert t.to_arrow().to_pylist() == [{"k": 1, "v": None}]


# ------------------------------------------------------------------------------------ time travel
def test_time_travel_reads_old_snapshot_with_its_own_schema(catalog):
    """Time travel reads a snapshot with the schema its ``schemaId`` names, as Java Paimon
    (AbstractFileStoreTable.tryTimeTravel) and pypaimon do; the latest state uses the current one."""
    t = _table(catalog)
    _write_v0(t)
    v0 = t.arrow_schema
    SchemaUpdate(t.store).rename_column("name", "title").drop_column("price").add_column("note", pa.string()) \
        .update_column_type("qty", pa.int64()).commit()
    # the latest state (still snapshot 1, written under schema 0) reads with the current schema
    cur = t.to_arrow()
    assert cur.schema == t.arrow_schema
    assert rows(cur, "dt", "id")[0] == {"id": 1, "dt": "a", "title": "x", "qty": 10, "amount": D("1.25"),
                                        "note": None}
    _write(t, id=[1], dt=["a"], title=["new"], qty=[1], amount=[D("1.00")], note=["n"])
    old = t.to_arrow(snapshot_id=1)
    assert old.schema == v0
    assert rows(old, "dt", "id")[0]["name"] == "x"
    assert rows(t.to_arrow(snapshot_id=2), "dt", "id")[0]["title"] == "new"


def test_compaction_rewrites_old_files_under_the_current_schema(catalog):
    t = _table(catalog)
    _write_v0(t)
    SchemaUpdate(t.store).rename_column("name", "title").add_column("note", pa.string()) \
        .update_column_type("qty", pa.int64()).commit()
    _write(t, id=[2], dt=["a"], title=["Y"], qty=[2], price=[2.0], amount=[D("2.00")], note=["n"])
    before = rows(t.to_arrow(), "dt", "id")
    t.compact(full=True)
    assert rows(t.to_arrow(), "dt", "id") == before
    # merged buckets are rewritten under schema 1; a lone file may just be moved up a level
    entries = t.store.file_store_scan().live_entries(t.latest_snapshot())
    assert 1 in {e.file.schema_id for e in entries}


# -------------------------------------------------------------------------------------- rejections
@pytest.fixture
def guarded(catalog) -> Table:
    """A PK table whose options reference columns: sequence.field and a per-field option."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("seq", pa.int64()), ("name", pa.string()),
                        ("note", pa.string()), ("qty", pa.int32()), ("big", pa.int64()), ("f", pa.float64()),
                        ("amount", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("b", pa.binary()),
                        ("op", pa.string())])
    return catalog.create_table(
        "db.g", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
        options={"bucket": "2", "sequence.field": "seq", "fields.note.stats-mode": "full",
                 "rowkind.field": "op"},
    )


REJECTIONS = [
    # partition and primary-key columns
    (lambda u: u.drop_column("dt"), SchemaError, r"drop column 'dt'.*partition column"),
    (lambda u: u.rename_column("dt", "day"), SchemaError, r"rename column 'dt'.*partition column"),
    (lambda u: u.update_column_type("dt", "VARCHAR(10)"), SchemaError, r"type of column 'dt'.*partition"),
    (lambda u: u.drop_column("id"), SchemaError, r"drop column 'id'.*primary-key"),
    (lambda u: u.update_column_type("id", pa.float64()), SchemaError, r"type of column 'id'.*primary-key"),
    (lambda u: u.update_column_nullability("id", True), SchemaError, r"nullability of column 'id'.*primary-key"),
    # nullability
    (lambda u: u.update_column_nullability("name", False), SchemaError, r"'name'.*NOT NULL"),
    (lambda u: u.add_column("nn", pa.int32(), nullable=False), SchemaError, r"add column 'nn'.*must be nullable"),
    (lambda u: u.add_column("nn", "INT NOT NULL"), SchemaError, r"'nn'.*must be nullable"),
    # names
    (lambda u: u.add_column("name", pa.int32()), SchemaError, r"'name' already exists"),
    (lambda u: u.rename_column("name", "qty"), SchemaError, r"'qty' already exists"),
    (lambda u: u.add_column("_KEY_x", pa.int32()), SchemaError, r"reserved"),
    (lambda u: u.rename_column("name", "_SEQUENCE_NUMBER"), SchemaError, r"reserved"),
    (lambda u: u.add_column("x", pa.int32()).add_column("x", pa.int64()), SchemaError, r"'x' already exists"),
    # unknown columns
    (lambda u: u.drop_column("nope"), SchemaError, r"no column 'nope'"),
    (lambda u: u.rename_column("nope", "x"), SchemaError, r"no column 'nope'"),
    (lambda u: u.update_column_type("nope", pa.int64()), SchemaError, r"no column 'nope'"),
    (lambda u: u.update_column_nullability("nope", True), SchemaError, r"no column 'nope'"),
    (lambda u: u.update_column_comment("nope", "c"), SchemaError, r"no column 'nope'"),
    (lambda u: u.move_column("nope", "first"), SchemaError, r"no column 'nope'"),
    (lambda u: u.move_column("name", ("after", "nope")), SchemaError, r"no column 'nope'"),
    (lambda u: u.move_column("name", ("after", "name")), SchemaError, r"relative to itself"),
    (lambda u: u.add_column("x", pa.int32(), position=("after", "nope")), SchemaError, r"no column 'nope'"),
    (lambda u: u.add_column("x", pa.int32(), position="middle"), SchemaError, r"position must be"),
    (lambda u: u.drop_column("name").rename_column("name", "x"), SchemaError, r"no column 'name'"),
    # columns options refer to
    (lambda u: u.rename_column("seq", "s2"), SchemaError, r"options \['sequence.field'\] refer to it"),
    (lambda u: u.drop_column("seq"), SchemaError, r"options \['sequence.field'\] refer to it"),
    (lambda u: u.rename_column("note", "n2"), SchemaError, r"options \['fields.note.stats-mode'\]"),
    (lambda u: u.drop_column("note"), SchemaError, r"options \['fields.note.stats-mode'\]"),
    (lambda u: u.drop_column("op"), SchemaError, r"options \['rowkind.field'\]"),
    # narrowing and lossy or unrelated type changes
    (lambda u: u.update_column_type("big", pa.int32()), SchemaError, r"'big' .* from BIGINT to INT: not a lossless"),
    (lambda u: u.update_column_type("big", pa.float64()), SchemaError, r"from BIGINT to DOUBLE"),
    (lambda u: u.update_column_type("qty", pa.float32()), SchemaError, r"from INT to FLOAT"),
    (lambda u: u.update_column_type("qty", pa.int16()), SchemaError, r"from INT to SMALLINT"),
    (lambda u: u.update_column_type("qty", pa.string()), SchemaError, r"from INT to STRING"),
    (lambda u: u.update_column_type("qty", pa.decimal128(20, 0)), SchemaError, r"from INT to DECIMAL\(20, 0\)"),
    (lambda u: u.update_column_type("f", pa.float32()), SchemaError, r"from DOUBLE to FLOAT"),
    (lambda u: u.update_column_type("name", pa.int64()), SchemaError, r"from STRING to BIGINT"),
    (lambda u: u.update_column_type("amount", pa.decimal128(9, 2)), SchemaError,
     r"DECIMAL\(10, 2\) to DECIMAL\(9, 2\)"),
    (lambda u: u.update_column_type("amount", pa.decimal128(10, 3)), SchemaError,
     r"DECIMAL\(10, 2\) to DECIMAL\(10, 3\)"),
    (lambda u: u.update_column_type("amount", pa.decimal128(12, 1)), SchemaError,
     r"DECIMAL\(10, 2\) to DECIMAL\(12, 1\)"),
    (lambda u: u.update_column_type("ts", "TIMESTAMP(3)"), SchemaError, r"TIMESTAMP\(6\) to TIMESTAMP\(3\)"),
    (lambda u: u.update_column_type("ts", pa.timestamp("us", tz="UTC")), SchemaError,
     r"TIMESTAMP\(6\) to TIMESTAMP\(6\) WITH LOCAL TIME ZONE"),
    (lambda u: u.update_column_type("b", pa.string()), SchemaError, r"from BYTES to STRING"),
    (lambda u: u.update_column_type("name", "NOT A TYPE"), SchemaError, r"Cannot parse type"),
    (lambda u: u.update_column_type("name", 42), SchemaError, r"expected a pyarrow type"),
    (lambda u: u.update_column_type("ts", pa.timestamp("ns")), UnsupportedFeatureError, r"precision above 6"),
    (lambda u: u.update_column_type("ts", "TIMESTAMP(9)"), UnsupportedFeatureError, r"nanosecond"),
    (lambda u: u.add_column("tsn", pa.timestamp("ns")), UnsupportedFeatureError, r"nanosecond"),
    (lambda u: u.add_column("l", pa.list_(pa.timestamp("ns"))), UnsupportedFeatureError, r"nanosecond"),
    # options
    (lambda u: u.set_option("merge-engine", "first-row"), SchemaError, r"'merge-engine'.*immutable"),
    (lambda u: u.set_option("bucket-key", "id"), SchemaError, r"'bucket-key'.*immutable"),
    (lambda u: u.set_option("rowkind.field", "name"), SchemaError, r"'rowkind.field'.*immutable"),
    (lambda u: u.remove_option("rowkind.field"), SchemaError, r"'rowkind.field'.*immutable"),
    (lambda u: u.set_option("primary-key", "id"), SchemaError, r"'primary-key'.*immutable"),
    (lambda u: u.set_option("partition", "dt"), SchemaError, r"'partition'.*immutable"),
    (lambda u: u.set_option("partial-update.remove-record-on-delete", "true"), SchemaError, r"immutable"),
    (lambda u: u.set_option("aggregation.remove-record-on-delete", "true"), SchemaError, r"immutable"),
    (lambda u: u.set_option("data-file.path-directory", "x"), SchemaError, r"immutable"),
    (lambda u: u.set_option("bucket", "-2"), UnsupportedFeatureError, r"'bucket'.*'2' to '-2'.*rescale"),
    (lambda u: u.set_option("bucket", "-1"), UnsupportedFeatureError, r"rescale"),
    (lambda u: u.remove_option("bucket"), UnsupportedFeatureError, r"rescale"),
    (lambda u: u.remove_option("file.format"), SchemaError, r"file.format"),
    (lambda u: u.set_option("file.format", "csv"), UnsupportedFeatureError, r"file.format"),
    (lambda u: u.set_option("changelog-producer", "bogus"), (UnsupportedFeatureError, OptionError),
     r"changelog-producer"),
    (lambda u: u.set_option("no.such.option", "1"), OptionError, r"Unknown table option 'no.such.option'"),
    (lambda u: u.set_option("snapshot.num-retained.min", "many"), OptionError, r"not an integer"),
    (lambda u: u.set_option("sequence.field", "nope"), OptionError, r"sequence.field 'nope' is not a column"),
    (lambda u: u.set_option("fields.nope.stats-mode", "full"), OptionError, r"column 'nope'"),
]


@pytest.mark.parametrize(("change", "error", "match"), REJECTIONS)
def test_rejected_changes_write_nothing(guarded, change, error, match):
    before = guarded.schema
    with pytest.raises(error, match=match):
        change(SchemaUpdate(guarded.store)).commit()
    assert _schema_files(guarded) == ["schema-0"]
    assert guarded.refresh().schema == before


def test_rejections_on_append_table(catalog):
    t = catalog.create_table("db.app", pa.schema([("a", pa.int32()), ("p", pa.string())]), partition_keys=["p"])
    with pytest.raises(OptionError, match=r"'sequence\.field' needs a primary key"):
        SchemaUpdate(t.store).set_option("sequence.field", "a").commit()
    # Java's SchemaValidation refuses it at create and ALTER (streams of append tables skip OVERWRITEs)
    with pytest.raises(OptionError, match=r"'streaming-read-overwrite' needs a primary key"):
        SchemaUpdate(t.store).set_option("streaming-read-overwrite", "true").commit()
    with pytest.raises(OptionError, match=r"'streaming-read-overwrite' needs a primary key"):
        catalog.create_table("db.app2", pa.schema([("a", pa.int32())]), options={"streaming-read-overwrite": "true"})
    with pytest.raises(SchemaError, match=r"merge-engine.*immutable"):
        SchemaUpdate(t.store).set_option("merge-engine", "first-row").commit()
    with pytest.raises(SchemaError, match=r"drop column 'p'.*partition column"):
        SchemaUpdate(t.store).drop_column("a").drop_column("p").commit()
    single = catalog.create_table("db.one", pa.schema([("a", pa.int32())]))
    with pytest.raises(SchemaError, match="only column"):
        SchemaUpdate(single.store).add_column("x", pa.int8()).drop_column("a").drop_column("x").commit()
    with pytest.raises(SchemaError, match="nested types cannot be changed"):
        (SchemaUpdate(t.store).add_column("l", pa.list_(pa.int32()))
         .update_column_type("l", pa.list_(pa.int64())).commit())


def test_rename_column_in_bucket_key_rejected(catalog):
    schema = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("v", pa.string())])
    t = catalog.create_table("db.bk", schema, primary_keys=["a", "b"], options={"bucket": "2", "bucket-key": "a"})
    with pytest.raises(SchemaError, match=r"options \['bucket-key'\] refer to it"):
        SchemaUpdate(t.store).rename_column("a", "a2").commit()
    # the other key column can be renamed
    assert SchemaUpdate(t.store).rename_column("b", "b2").commit().primary_keys == ("a", "b2")


def test_empty_update_writes_nothing(catalog):
    t = _table(catalog)
    assert SchemaUpdate(t.store).commit() is t.schema
    assert _schema_files(t) == ["schema-0"]


# ------------------------------------------------------------------------------------- concurrency
class _RacingFileIO:
    """Delegates to a FileIO; runs ``before_create`` just before the first ``try_create`` (a racing peer)."""

    def __init__(self, inner: Any, before_create: Any) -> None:
        self._inner = inner
        self._before = before_create
        self.creates: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def try_create(self, path: str, data: bytes) -> bool:
        self.creates.append(path.rsplit("/", 1)[-1])
        if self._before is not None:
            before, self._before = self._before, None
            before()
        return self._inner.try_create(path, data)


def test_stale_copies_land_as_consecutive_ids(catalog):
    _table(catalog)
    a, b = catalog.get_table("db.t"), catalog.get_table("db.t")
    ua = SchemaUpdate(a.store).add_column("note", pa.string())
    ub = SchemaUpdate(b.store).rename_column("name", "title")
    assert ua.commit().id == 1
    s2 = ub.commit()  # b's copy still says schema 0: commit reloads first
    assert s2.id == 2 and b.schema.id == 2
    assert s2.field_names == ("id", "dt", "title", "qty", "price", "amount", "note")
    assert a.refresh().schema == s2


def test_concurrent_commit_retries_on_the_winner_and_revalidates(catalog):
    _table(catalog)
    a, b = catalog.get_table("db.t"), catalog.get_table("db.t")
    racing = _RacingFileIO(b.file_io, lambda: SchemaUpdate(a.store).add_column("note", pa.string()).commit())
    b.file_io = racing
    s = SchemaUpdate(b.store).add_column("extra", pa.int64()).commit()
    # b computed schema-1 too, lost the put-if-absent, reloaded and landed as schema-2
    assert racing.creates == ["schema-1", "schema-2"]
    assert s.id == 2 and s.field("note").id == 6 and s.field("extra").id == 7 and s.highest_field_id == 7

    # a racing rename makes b's change invalid: b's retry re-validates and raises, writing nothing
    racing = _RacingFileIO(racing._inner, lambda: SchemaUpdate(a.store).rename_column("qty", "n").commit())
    b.file_io = racing
    with pytest.raises(SchemaError, match="no column 'qty'"):
        SchemaUpdate(b.store).drop_column("qty").commit()
    assert racing.creates == ["schema-3"]
    assert _schema_files(b) == [f"schema-{i}" for i in range(4)]
    assert "n" in b.refresh().schema.field_names

    # another race: both add the same name; the loser's retry sees the duplicate
    racing = _RacingFileIO(racing._inner, lambda: SchemaUpdate(a.store).add_column("dup", pa.int8()).commit())
    b.file_io = racing
    with pytest.raises(SchemaError, match="'dup' already exists"):
        SchemaUpdate(b.store).add_column("dup", pa.int8()).commit()


def test_commit_gives_up_after_bounded_retries(catalog):
    t = _table(catalog)

    class AlwaysTaken(_RacingFileIO):
        def try_create(self, path: str, data: bytes) -> bool:
            self.creates.append(path)
            return False

    t.file_io = AlwaysTaken(t.file_io, None)
    with pytest.raises(CommitConflictError, match="10 attempts"):
        SchemaUpdate(t.store).add_column("x", pa.int8()).commit()
    assert len(t.file_io.creates) == 10


def test_changes_are_plain_values():
    assert DropColumn("a") == DropColumn("a")
    assert hash(RenameColumn("a", "b")) == hash(RenameColumn("a", "b"))
    with pytest.raises(AttributeError):
        DropColumn("a").name = "b"  # type: ignore[misc]


@pytest.mark.parametrize("key", ["ignore-delete"])
def test_ignore_delete_cannot_be_turned_off_again(tmp_path, key):
    """Paimon 1.x refuses SET ignore-delete from true to false (0.9 predates the rule); turning it
    on, and removing it, stay allowed as in Paimon."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1"})
    t.update_schema().set_option(key, "true").commit()
    with pytest.raises(SchemaError, match=rf"cannot change {key} from true to false"):
        t.update_schema().set_option(key, "false").commit()
    assert t.schema.options[key] == "true"
    t.update_schema().set_option(key, "TRUE").commit()  # true again is no change of mode
    t.update_schema().remove_option(key).commit()


def test_deletion_vectors_mode_cannot_change_without_modifiable(tmp_path):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1"})
    with pytest.raises(SchemaError, match=r"deletion vectors mode from false to true"):
        t.update_schema().set_option("deletion-vectors.enabled", "true").commit()
    t.update_schema().set_option("deletion-vectors.enabled", "false").commit()  # no change

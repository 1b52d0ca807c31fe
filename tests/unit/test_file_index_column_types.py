"""Bloom-filter and bitmap index columns, and nested names ``m[k]`` of every index type, checked at
create and ALTER as Paimon 2.0's ``SchemaValidation.validateFileIndex`` checks them (HEAD's source is
the spec: Java 0.9, pypaimon 2.1 and pypaimon-rust 0.4 check nothing at create; Java's writers fail
on such columns later, as ours refuse them at write). A table another engine created so stays
readable and alterable; only a new problem is refused."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError, UnsupportedFeatureError
from lake_assets.table import Table

SCHEMA = pa.schema([
    ("id", pa.int32()), ("s", pa.string()), ("ok", pa.bool_()), ("dec", pa.decimal128(10, 2)),
    ("bin", pa.binary()), ("arr", pa.list_(pa.int32())), ("row", pa.struct([("x", pa.int32())])),
    ("m", pa.map_(pa.string(), pa.int64())), ("m_ok", pa.map_(pa.string(), pa.bool_())),
    ("m_int", pa.map_(pa.int32(), pa.string())),
])
TYPES = {"ok": "BOOLEAN", "dec": "DECIMAL(10, 2)", "bin": "BYTES", "arr": "ARRAY<INT>", "row": "ROW<`x` INT>"}
# (index type, column) -> Java's reason (its visitors' messages; "mutiset" is not reached here)
REFUSED = {
    ("bloom-filter", "ok"): "Does not support type boolean",
    ("bloom-filter", "dec"): "Does not support decimal",
    ("bloom-filter", "arr"): "Does not support type array",
    ("bloom-filter", "row"): "Does not support type row",
    ("bitmap", "dec"): "Does not support decimal",
    ("bitmap", "bin"): "Does not support type binary",
    ("bitmap", "arr"): "Does not support type array",
    ("bitmap", "row"): "Does not support type row",
}


@pytest.mark.parametrize(("kind", "column"), sorted(REFUSED))
def test_create_refuses_a_type_the_index_cannot_key(catalog: Catalog, kind: str, column: str) -> None:
    message = (rf"^Cannot create db.t: Column '{column}' with type '{TYPES[column]}' is not supported by '{kind}' "
               rf"index \(file-index.{kind}.columns\). {REFUSED[(kind, column)]}$")
    with pytest.raises(OptionError, match=message.replace("<", r"\<").replace("(10, 2)", r"\(10, 2\)")):
        catalog.create_table("db.t", SCHEMA, options={f"file-index.{kind}.columns": f"id,{column}"})
    assert not catalog.table_exists("db.t")


@pytest.mark.parametrize("kind", ["bloom-filter", "bitmap", "bsi", "range-bitmap"])
def test_create_refuses_nested_names_paimon_refuses(catalog: Catalog, kind: str) -> None:
    key = f"file-index.{kind}.columns"
    with pytest.raises(OptionError, match=rf"^Cannot create db.t: Column 's' is configured as nested column in "
                                          rf"'{key}' but is not a map type. Only map type supports nested column.$"):
        catalog.create_table("db.t", SCHEMA, options={key: "s[a]"})
    with pytest.raises(OptionError, match=rf"Column 'm_int' is configured as nested column in '{key}', but its map "
                                          r"key type is INT NOT NULL. Only CHAR/VARCHAR/STRING is supported.$"):
        catalog.create_table("db.t", SCHEMA, options={key: "m_int[1]"})
    assert not catalog.table_exists("db.t")


def test_map_values_are_checked_by_the_value_type(catalog: Catalog) -> None:
    with pytest.raises(OptionError, match=r"Column 'm_ok\[a\]' with type 'BOOLEAN' is not supported by "
                                          r"'bloom-filter' index .*Does not support type boolean$"):
        catalog.create_table("db.t", SCHEMA, options={"file-index.bloom-filter.columns": "m_ok[a]"})
    catalog.create_table("db.t", SCHEMA, options={"file-index.bloom-filter.columns": "m[a],s,id"})


def test_accepted_where_java_accepts(catalog: Catalog) -> None:
    """Java 2.0 accepts a BOOLEAN bitmap and bitmaps of map values; lake_assets refuses their writes
    (Paimon 0.9/1.0 readers would misread BOOLEAN bitmaps; map-value bitmaps are not implemented)."""
    t = catalog.create_table("db.t", SCHEMA, options={"file-index.bitmap.columns": "ok,m[a],s"})
    with pytest.raises(UnsupportedFeatureError, match=r"file-index\.bitmap\.columns"):
        t.write_arrow(pa.table({c: [None] for c in SCHEMA.names}, schema=SCHEMA))


def carry(table: Table, key: str, value: str) -> Table:
    """The table with an option a schema another engine wrote carries (no validation here)."""
    schema = table.schema
    new = dataclasses.replace(schema, id=schema.id + 1, options={**schema.options, key: value})
    table.file_io.write_bytes(table.paths.schema_file(new.id), new.to_json().encode())
    return table.refresh()


def test_alter_refuses_a_new_problem_and_keeps_a_carried_one(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={"file-index.bloom-filter.columns": "id"})
    with pytest.raises(OptionError, match=r"^Cannot alter db.t: Column 'ok' with type 'BOOLEAN' is not supported"):
        t.update_schema().set_option("file-index.bloom-filter.columns", "id,ok").commit()
    with pytest.raises(OptionError, match=r"Column 'n' with type 'DECIMAL\(5, 1\)' is not supported by 'bitmap'"):
        t.update_schema().add_column("n", pa.decimal128(5, 1)).set_option("file-index.bitmap.columns", "n").commit()
    with pytest.raises(OptionError, match="Column 'id' is configured as nested column"):
        t.update_schema().set_option("file-index.bitmap.columns", "id[x]").commit()
    assert t.refresh().schema.id == 0
    row = pa.table({c: [None] for c in SCHEMA.names}, schema=SCHEMA)
    t.write_arrow(row)
    carry(t, "file-index.bloom-filter.columns", "id,ok")
    assert t.to_arrow().num_rows == 1
    with pytest.raises(UnsupportedFeatureError, match=r"file-index\.bloom-filter\.columns"):
        t.write_arrow(row)
    t.update_schema().set_option("snapshot.num-retained.min", "3").commit()  # carried: still alterable
    with pytest.raises(OptionError, match="Column 'dec' with type 'DECIMAL"):
        t.update_schema().set_option("file-index.bloom-filter.columns", "id,ok,dec").commit()

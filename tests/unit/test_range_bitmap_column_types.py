"""``file-index.range-bitmap.columns`` naming a column whose type the range-bitmap index cannot key
is refused at create and ALTER with an `OptionError` naming column and type, as Paimon HEAD's
``SchemaValidation.validateFileIndex`` refuses it through ``RangeBitmapFileIndexFactory.validate``
(``KeyFactory.create``: "Column 'b' with type 'BYTES' is not supported by 'range-bitmap' index. data
type BYTESis not supported.", and its own messages for DECIMAL above precision 18 and TIMESTAMP
above 6). The bsi check and this one are one loop; a map value ``m[k]`` is checked by the map's
value type, as Java checks it. A table another engine created so stays readable and alterable, and
is refused at write and compaction."""

from __future__ import annotations

import dataclasses
import re

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError, UnsupportedFeatureError
from lake_assets.spec.data_types import DataField, IntType, LocalZonedTimestampType, TimestampType
from lake_assets.table import Table
from lake_assets.table_rules import check_options

SCHEMA = pa.schema([
    ("id", pa.int32()), ("s", pa.string()), ("b", pa.binary()), ("arr", pa.list_(pa.int32())),
    ("dec18", pa.decimal128(18, 2)), ("dec20", pa.decimal128(20, 2)),
    ("ts6", pa.timestamp("us")), ("ltz6", pa.timestamp("us", tz="UTC")),
    ("f", pa.float32()), ("ok", pa.bool_()), ("d", pa.date32()), ("t", pa.time32("ms")),
    ("m_int", pa.map_(pa.string(), pa.int32())), ("m_bytes", pa.map_(pa.string(), pa.binary())),
])
KEY = "file-index.range-bitmap.columns"


def carry_option(table: Table, key: str, value: str) -> Table:
    """The table with ``key = value`` by a schema another engine wrote (no validation here)."""
    schema = table.schema
    new = dataclasses.replace(schema, id=schema.id + 1, options={**schema.options, key: value})
    table.file_io.write_bytes(table.paths.schema_file(new.id), new.to_json().encode())
    return table.refresh()


@pytest.mark.parametrize(("column", "type_text", "why"), [
    ("b", "BYTES", r"data type BYTES is not supported\."),
    ("arr", "ARRAY<INT>", r"data type ARRAY<INT> is not supported\."),
    ("dec20", r"DECIMAL\(20, 2\)", r"The range-bitmap index only supports DECIMAL with a precision in \[0, 18\]\."),
    ("m_int", "MAP<STRING NOT NULL, INT>", r"data type MAP<STRING NOT NULL, INT> is not supported\."),
    ("m_bytes[k]", "BYTES", r"data type BYTES is not supported\."),
])
def test_create_refuses_a_type_the_index_cannot_key(catalog: Catalog, column: str, type_text: str, why: str):
    message = (rf"Cannot create db.t: Column '{re.escape(column)}' with type "
               rf"'{type_text}' is not supported by 'range-bitmap' index \(file-index.range-bitmap.columns\). {why}$")
    with pytest.raises(OptionError, match=message):
        catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", KEY: f"id,{column}"})
    assert not catalog.table_exists("db.t")


def test_types_java_keys_are_accepted_and_map_values_refused_at_write(catalog: Catalog):
    # every type KeyFactory.create takes; a map value of such a type passes Java's validation too,
    # while its writer fails on map values (so does ours)
    columns = "id,s,dec18,ts6,ltz6,f,ok,d,t,m_int[k]"
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", KEY: columns})
    assert t.schema.options[KEY] == columns
    with pytest.raises(UnsupportedFeatureError, match=r"names 'm_int\[k\]'.*bloom filters only"):
        t.write_arrow(pa.table({c: [None] for c in SCHEMA.names}, schema=SCHEMA))


def test_alter_refuses_it_too_and_changes_nothing(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", KEY: "id"})
    with pytest.raises(OptionError, match=r"Cannot alter db.t: Column 'b' with type 'BYTES' is not supported by "
                                          r"'range-bitmap' index"):
        t.update_schema().set_option(KEY, "id,b").commit()
    # a column added with such a type and indexed in the same ALTER
    with pytest.raises(OptionError, match=r"Column 'v' with type 'BYTES' is not supported by 'range-bitmap' index"):
        t.update_schema().add_column("v", pa.binary()).set_option(KEY, "v").commit()
    # a column whose type widens to one the index cannot key
    t.update_schema().set_option(KEY, "id,dec18").commit()
    assert t.refresh().schema.id == 1
    with pytest.raises(OptionError, match=r"Column 'dec18' with type 'DECIMAL\(20, 2\)' is not supported by "
                                          r"'range-bitmap' index"):
        t.update_schema().update_column_type("dec18", pa.decimal128(20, 2)).commit()
    assert t.refresh().schema.id == 1


def test_one_loop_checks_bsi_map_values_as_java_does(catalog: Catalog):
    # Java validates a map value m[k] by the map's value type for every index kind: bsi too
    with pytest.raises(OptionError, match=r"Column 'm_bytes\[k\]' with type 'BYTES' is not supported by 'bsi' "
                                          r"index \(file-index.bsi.columns\)\. BYTES type is not support"):
        catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", "file-index.bsi.columns": "m_bytes[k]"})
    assert not catalog.table_exists("db.t")


@pytest.mark.parametrize(("column", "match"), [
    ("b", "does not support type"),
    ("arr", "does not support type ARRAY"),
    ("dec20", "precision 18"),
])
def test_a_table_another_engine_indexed_so_stays_readable_and_alterable(catalog: Catalog, column: str, match: str):
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    row = pa.table({c: [None] for c in SCHEMA.names}, schema=SCHEMA).set_column(0, "id", pa.array([1], pa.int32()))
    t.write_arrow(row)
    carry_option(t, KEY, column)
    assert t.to_arrow().to_pylist() == row.to_pylist()
    with pytest.raises(UnsupportedFeatureError, match=rf"Cannot write to db.t: option {KEY}.*{match}"):
        t.write_arrow(row)
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.compact(full=True)
    # an ALTER that does not add a problem keeps the one it carries
    t.update_schema().set_option("snapshot.num-retained.min", "3").add_column("w", pa.int32()).commit()
    assert t.refresh().schema.options[KEY] == column
    other = "arr" if column == "b" else "b"
    with pytest.raises(OptionError, match=rf"Column '{other}' with type '(BYTES|ARRAY<INT>)' is not supported by "
                                          r"'range-bitmap' index"):
        t.update_schema().set_option(KEY, f"{column},{other}").commit()
    assert t.to_arrow().column("id").to_pylist() == [1]


@pytest.mark.parametrize("typ", [TimestampType(9), LocalZonedTimestampType(7)])
def test_timestamps_above_precision_6_are_refused(typ: TimestampType | LocalZonedTimestampType):
    # lake_assets creates no such column, but an ALTER of a table another engine created with one checks
    # the options the same way
    fields = [DataField(0, "id", IntType()), DataField(1, "ts", typ)]
    message = (rf"Cannot alter db.t: Column 'ts' with type '{re.escape(str(typ))}' is not supported by "
               r"'range-bitmap' index \(file-index.range-bitmap.columns\)\. "
               r"The range-bitmap index only supports TIMESTAMP with a precision in \[0, 6\]\.$")
    with pytest.raises(OptionError, match=message):
        check_options("Cannot alter db.t", fields, [], [], {"bucket": "-1", KEY: "id,ts"})
    assert check_options("Cannot alter db.t", fields, [], [], {"bucket": "-1", KEY: "id"}).bucket == -1

"""``file-index.bsi.columns`` naming a column whose type the bsi index cannot key (STRING, DOUBLE,
BOOLEAN, ...) is refused at create and ALTER with an `OptionError` naming the column and type, as
Paimon 1.x's ``SchemaValidation.validateFileIndex`` refuses it ("Column 'v' with type 'STRING' is
not supported by 'bsi' index. STRING type is not support to build bsi index yet."). A table another
engine created so keeps today's behaviour: readable, refused at write, and its other options and
columns can still be altered."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError, UnsupportedFeatureError
from lake_assets.table import Table

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string()), ("d", pa.float64()), ("ok", pa.bool_()),
                    ("n", pa.int64()), ("dec", pa.decimal128(38, 2))])


def carry_bsi_column(table: Table, column: str) -> Table:
    """The table with a bsi index on ``column`` by a schema another engine wrote (no validation here)."""
    schema = table.schema
    options = {**schema.options, "file-index.bsi.columns": column}
    new = dataclasses.replace(schema, id=schema.id + 1, options=options)
    table.file_io.write_bytes(table.paths.schema_file(new.id), new.to_json().encode())
    table.refresh()
    return table


@pytest.mark.parametrize(("column", "type_text"), [("v", "STRING"), ("d", "DOUBLE"), ("ok", "BOOLEAN")])
def test_create_refuses_a_bsi_index_on_a_type_it_cannot_key(catalog: Catalog, column: str, type_text: str):
    message = (rf"Cannot create db.t: Column '{column}' with type '{type_text}' is not supported by 'bsi' index "
               rf"\(file-index.bsi.columns\). {type_text} type is not support to build bsi index yet")
    with pytest.raises(OptionError, match=message):
        catalog.create_table("db.t", SCHEMA, options={"file-index.bsi.columns": f"n,{column}"})
    assert not catalog.table_exists("db.t")


def test_alter_refuses_it_too_and_changes_nothing(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"file-index.bsi.columns": "n"})
    with pytest.raises(OptionError, match=r"Cannot alter db.t: Column 'v' with type 'STRING' is not supported"):
        t.update_schema().set_option("file-index.bsi.columns", "n,v").commit()
    # a column added with such a type and indexed in the same ALTER
    with pytest.raises(OptionError, match=r"Column 's' with type 'STRING' is not supported by 'bsi' index"):
        t.update_schema().add_column("s", pa.string()).set_option("file-index.bsi.columns", "s").commit()
    assert t.refresh().schema.id == 0


def test_types_the_index_keys_are_accepted(catalog: Catalog):
    # DECIMAL of any precision is accepted as Paimon accepts it; lake_assets writes it up to precision 18
    t = catalog.create_table("db.t", SCHEMA, options={"file-index.bsi.columns": "id,n,dec"})
    t.update_schema().set_option("file-index.bsi.columns", "dec").commit()
    with pytest.raises(UnsupportedFeatureError, match="precision 18"):
        t.refresh().write_arrow(pa.table({c: [None] for c in SCHEMA.names}, schema=SCHEMA))


def test_a_table_another_engine_indexed_so_stays_readable_and_alterable(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA)
    row = pa.table({"id": [1], "v": ["a"], "d": [1.0], "ok": [True], "n": [1], "dec": [None]}, schema=SCHEMA)
    t.write_arrow(row)
    carry_bsi_column(t, "v")
    assert t.to_arrow().to_pylist() == row.to_pylist()
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot write to db.t: option file-index.bsi.columns"):
        t.write_arrow(row)
    # an ALTER that does not add a problem keeps the one it carries
    t.update_schema().set_option("snapshot.num-retained.min", "3").add_column("w", pa.int32()).commit()
    assert t.refresh().schema.options["file-index.bsi.columns"] == "v"
    with pytest.raises(OptionError, match=r"Column 'd' with type 'DOUBLE' is not supported by 'bsi' index"):
        t.update_schema().set_option("file-index.bsi.columns", "v,d").commit()

"""Repairing a table lake_assets refuses for its options' values (`Catalog.alter_table_options`)
writes the schema file Java 0.9's ``SchemaManager`` writes for the same ALTER, and Java reads and
writes the repaired table.

The broken table is what pypaimon-rust's ALTER leaves (tests/interop/test_peer_kinds_interop.py does
it for real): the next schema file carrying ``snapshot.num-retained.max`` = 5, below the default
minimum of 10, which Java's ``SchemaValidation`` refuses at ALTER but not when it opens the table.
Java's ``commitChanges`` checks only the schema it writes, so Java repairs it too: both engines apply
the same change to copies of one warehouse and the files are compared.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _break(wh: Path, **options: str) -> None:
    """schema-1: schema-0 with these options, as pypaimon-rust's ALTER writes it (unchecked)."""
    schema_dir = wh / "db.db" / "t" / "schema"
    schema = json.loads((schema_dir / "schema-0").read_text())
    schema["id"] = 1
    schema["options"] = {**schema["options"], **options}
    (schema_dir / "schema-1").write_text(json.dumps(schema))


def _schema_2(wh: Path) -> dict[str, Any]:
    schema = json.loads((wh / "db.db" / "t" / "schema" / "schema-2").read_text())
    assert schema.pop("timeMillis") > 0
    return schema  # type: ignore[no-any-return]


# (our ALTER, Java's changes)
REPAIRS = [
    ({"reset": ["snapshot.num-retained.max"]}, [{"change": "remove_option", "key": "snapshot.num-retained.max"}]),
    ({"set": {"snapshot.num-retained.max": "20", "snapshot.num-retained.min": "3"}},
     [{"change": "set_option", "key": "snapshot.num-retained.max", "value": "20"},
      {"change": "set_option", "key": "snapshot.num-retained.min", "value": "3"}]),
]


@pytest.mark.parametrize(("ours", "javas"), REPAIRS, ids=["reset", "set"])
def test_our_repair_writes_javas_schema_and_java_reads_and_writes_it(
        java: PaimonJava, tmp_path: Path, ours: dict[str, Any], javas: list[dict[str, str]]) -> None:
    wh, twin = tmp_path / "ours", tmp_path / "theirs"
    wh.mkdir()
    w = str(wh)
    java.create_table(w, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    java.write(w, "db.t", _rows([1, 2, 3], "j"))
    _break(wh, **{"snapshot.num-retained.max": "5"})
    shutil.copytree(wh, twin)
    cat = Catalog(w)
    with pytest.raises(OptionError, match=r"snapshot\.num-retained\.max=5 is below .*alter_table_options\('db\.t'"):
        cat.get_table("db.t")

    t = cat.alter_table_options("db.t", **ours)
    java.alter_table(str(twin), "db.t", *javas)
    assert _schema_2(wh) == _schema_2(twin)
    assert java.schema(w, "db.t")["id"] == 2

    # both engines read, write, compact and expire the repaired table, each seeing the other's rows
    t.write_arrow(_rows([3, 4], "ours"))
    java.write(w, "db.t", _rows([4, 5], "java"))
    t = cat.get_table("db.t")
    assert_same_table(t.to_arrow(), java.read(w, "db.t"))
    assert sorted(t.to_arrow().column("v").to_pylist()) == ["j1", "j2", "java4", "java5", "ours3"]
    t.compact(full=True)
    java.compact(w, "db.t", full=True)
    assert_same_table(cat.get_table("db.t").to_arrow(), java.read(w, "db.t"))

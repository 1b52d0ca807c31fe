"""Bloom-filter indexes of map values (``file-index.bloom-filter.columns = m[k]``, docs/format.md
§7.6) against Paimon Java 0.9, whose ``MapFileIndexMaintainer`` writes one bloom filter per key
over each row's value of that key, named ``m[k]`` in the container and sized by the key's options,
else the map column's: our containers equal Java's for the same rows and options (several keys and
columns, in Java's HashMap order), and our compaction of Java's table writes the bytes Java writes
for the output's rows. (Paimon 0.9 predicates cannot name a map value: no reader prunes by these.)
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.formats.file_index import FileIndexBuilder, index_plan, read_container
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

MAP = pa.map_(pa.string(), pa.int32())
SCHEMA = pa.schema([("id", pa.int64()), ("m", MAP), ("s", pa.string())])


def _rows(ids: range) -> pa.Table:
    maps: list[Any] = []
    for i in ids:
        maps.append(None if i % 7 == 3 else [("a", i), ("b", i % 5)] if i % 2 else [("c", -i), ("a", None)])
    return pa.table({"id": list(ids), "m": pa.array(maps, MAP), "s": [f"s{i % 4}" for i in ids]}, schema=SCHEMA)


def _index_bytes(wh: str, f: dict[str, Any]) -> bytes:
    if "embedded" in f:
        return base64.b64decode(f["embedded"])
    (name,) = f["extra_files"]
    (path,) = Path(wh).rglob(name)
    return path.read_bytes()


@pytest.mark.parametrize("options", [
    {"file-index.bloom-filter.columns": "m[a],m[b],id", "file-index.bloom-filter.m.items": "100",
     "file-index.bloom-filter.m[a].fpp": "0.01", "file-index.bloom-filter.id.items": "50"},
    {"file-index.bloom-filter.columns": "m[a],m[zz],m[b],m[c],m[d],s", "file-index.bloom-filter.m.items": "30",
     "file-index.bitmap.columns": "id"},
    {"file-index.bloom-filter.columns": "m[c]"},  # default sizing: an .index file
], ids=["sized", "many-keys", "default"])
def test_our_map_value_blooms_are_javas(java: PaimonJava, wh: str, lake: Catalog, options: dict[str, str]) -> None:
    java.create_table(wh, "db.t", SCHEMA, options={**options, "bucket": "-1"})
    data = _rows(range(60))
    java.write(wh, "db.t", data)
    (f,) = java.file_index_test(wh, "db.t", None)
    builder = FileIndexBuilder(index_plan(lake.get_table("db.t").schema))
    builder.add(data)
    ours, to_file = builder.finish()
    assert ours == _index_bytes(wh, f)
    assert to_file == ("embedded" not in f)


def test_our_compaction_of_javas_map_value_index(java: PaimonJava, wh: str, lake: Catalog) -> None:
    opts = {"file-index.bloom-filter.columns": "m[a],m[c]", "file-index.bloom-filter.m.items": "200", "bucket": "-1"}
    java.create_table(wh, "db.c", SCHEMA, options=opts)
    for k in range(3):
        java.write(wh, "db.c", _rows(range(k, 90, 3)))
    t = lake.get_table("db.c")
    t.compact(full=True)
    (out,) = java.file_index_test(wh, "db.c", None)
    assert set(read_container(_index_bytes(wh, out))) == {"m[a]", "m[c]"}
    (path,) = Path(wh).rglob(out["name"])
    java.create_table(wh, "db.again", SCHEMA, options=opts)
    java.write(wh, "db.again", pq.read_table(path).select(SCHEMA.names).cast(SCHEMA))
    (again,) = java.file_index_test(wh, "db.again", None)
    assert _index_bytes(wh, out) == _index_bytes(wh, again)
    assert_same_table(java.read(wh, "db.c"), _rows(range(90)))

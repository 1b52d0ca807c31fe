"""Paimon Java 0.9 reads files lake_assets names with ``file.suffix.include.compression = true``
(``data-<uuid>-0.zst.parquet``): 0.9 lacks the option (1.x) and carries it as an unknown key, and
takes a file's format from its last extension (``DataFilePathFactory.formatIdentifier``), as
every later version does. Java 0.9 writing into such a table names its files ``.parquet``
(0.9 predates the option); lake_assets reads and compacts the mix."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(ks: range) -> pa.Table:
    return pa.table({"k": list(ks), "v": [str(k) for k in ks]}, schema=SCHEMA)


@pytest.mark.parametrize(("fmt", "suffix"), [("parquet", ".zst.parquet"), ("orc", ".zst.orc"), ("avro", ".zst.avro")])
def test_java_reads_and_extends_a_suffixed_table(java: PaimonJava, lake: Catalog, wh: str, fmt: str,
                                                 suffix: str) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "file.format": fmt, "file.suffix.include.compression": "true"})
    t.write_arrow(_rows(range(6)))
    t.write_arrow(_rows(range(4, 9)))
    live = [e.file.file_name for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert len(live) == 2 and all(n.endswith(suffix) for n in live)
    assert java.read(wh, "db.t").sort_by("k").to_pylist() == _rows(range(9)).to_pylist()
    java.write(wh, "db.t", _rows(range(20, 22)))
    t = lake.get_table("db.t")
    t.compact(full=True)
    (compacted,) = [e.file.file_name for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert compacted.endswith(suffix)
    want = pa.concat_tables([_rows(range(9)), _rows(range(20, 22))]).to_pylist()
    assert java.read(wh, "db.t").sort_by("k").to_pylist() == want
    assert t.to_arrow().sort_by("k").to_pylist() == want

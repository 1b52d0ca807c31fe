"""More rows than one buffer, file or row group holds: Java spills and rolls files, so do we."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                    ("s", pa.string()), ("x", pa.float64())])
N = 10_000


def data(offset: int, n: int = N) -> pa.Table:
    ids = pa.array(range(offset, offset + n), pa.int64())
    return pa.table({"id": ids, "p": pc.cast(pc.bit_wise_and(ids, 1), pa.int32()),
                     "s": pc.binary_join_element_wise("row-", pc.cast(ids, pa.string()), ""),
                     "x": pc.multiply(pc.cast(ids, pa.float64()), 0.25)}, schema=SCHEMA)


def test_java_spilled_multi_file_writes_we_read_and_compact(java: PaimonJava, wh: str, lake: Catalog) -> None:
    # A tiny write buffer makes Java spill sorted runs to its IOManager and roll many small files.
    opts = {"bucket": "2", "write-buffer-size": "256 kb", "write-buffer-spillable": "true",
            "target-file-size": "128 kb", "page-size": "8 kb"}
    java.create_table(wh, "db.v", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options=opts)
    java.write(wh, "db.v", data(0))
    java.write(wh, "db.v", data(N // 2))  # half updates
    files = sum(len(s["files"]) for s in java.splits(wh, "db.v"))
    assert files > 4
    t = lake.get_table("db.v")
    assert_same_table(t.to_arrow(), java.read(wh, "db.v"))
    assert t.to_arrow().num_rows == N + N // 2
    t.compact(full=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, "db.v"))


def test_our_multi_file_writes_java_reads_and_compacts(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.v", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                          options={"bucket": "2", "target-file-size": "128 kb"})
    t.write_arrow(data(0))
    t.write_arrow(data(N // 2))
    assert_same_table(java.read(wh, "db.v"), t.to_arrow())
    java.compact(wh, "db.v", full=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, "db.v"))
    assert t.refresh().to_arrow().num_rows == N + N // 2

"""Our fixed-width dictionary pages against Paimon Java 0.9 (issue 14): a file whose integer,
float, decimal, date, time and timestamp columns repeat gets dictionary pages for each of them
(formats/file_layout), and Java's reader decodes every one exactly, before and after it compacts
the table and writes on top of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .data import ALL_TYPES, all_types_table
from .helpers import assert_same_table

# the fixed-width columns of ALL_TYPES whose dictionary is decided on a sample of each file
SAMPLED = ["i16", "i32", "f32", "f64", "dec", "dec_small", "d", "t", "ts3", "ts6", "ltz"]


def repeated_rows(copies: int) -> pa.Table:
    """ALL_TYPES' rows ``copies`` times over with unique ids: every other column repeats."""
    base = all_types_table(all_null_rows=False)
    table = pa.concat_tables([base] * copies)
    return table.set_column(0, ALL_TYPES.field("id"), pa.array(np.arange(table.num_rows), pa.int64()))


def dictionary_columns(path: Path) -> set[str]:
    md = pq.ParquetFile(path).metadata
    return {md.schema.column(j).path for j in range(md.num_columns)
            if all(md.row_group(g).column(j).has_dictionary_page for g in range(md.num_row_groups))}


def test_java_reads_our_fixed_width_dictionary_pages(java: PaimonJava, wh: str, lake: Catalog) -> None:
    ident = "db.dict"
    data = repeated_rows(200)
    t = lake.create_table(ident, ALL_TYPES, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(data)
    (path,) = sorted((Path(wh) / "db.db" / "dict").rglob("data-*.parquet"))
    assert set(SAMPLED) <= dictionary_columns(path)
    assert "id" not in dictionary_columns(path) and "_SEQUENCE_NUMBER" not in dictionary_columns(path)
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    # Java compacts our files and writes on top of them; both read the same rows
    java.compact(wh, ident, full=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))
    t.write_arrow(data.slice(0, 1000))
    java.write(wh, ident, data.slice(500, 1000))
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))

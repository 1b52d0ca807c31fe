"""Manifest column stats of Parquet files come from the footer parquet-cpp writes (no second pass
over the rows) and must equal what the computed path (`column_stats`) gives: every type, every
slice and take, chunks split over row groups, nested columns before the covered ones, all-null
chunks, and string values too long for Parquet's own statistics."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets import Catalog
from lake_assets.formats.data_file import DataFileWriter, DataFileWriterConfig
from lake_assets.formats.footer_stats import FOOTER_STRING_BYTES, FooterColumns
from lake_assets.formats.stats import column_stats
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema
from tests.differential.data import ALL_TYPES, all_types_table


def _system(piece: pa.Table) -> pa.Table:
    n = piece.num_rows
    return (piece.append_column("_SEQUENCE_NUMBER", pa.array(range(n), pa.int64()))
            .append_column("_VALUE_KIND", pa.array([0] * n, pa.int8())))


def _expected(schema: TableSchema, data: pa.Table, meta: DataFileMeta) -> None:
    values = column_stats([data.column(f.name) for f in schema.fields], [f.type for f in schema.fields])
    keys = list(schema.trimmed_primary_keys)
    assert meta.value_stats == values
    assert meta.key_stats == column_stats([data.column(k) for k in keys], schema.types(keys), truncate=128)


def _writer(tmp_path: Path, arrow: pa.Schema, name: str = "t") -> tuple[DataFileWriter, TableSchema]:
    cat = Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(f"db.{name}", arrow, primary_keys=["id"], options={"bucket": "1"})
    return DataFileWriter(t.file_io, str(tmp_path / name), t.schema, DataFileWriterConfig()), t.schema


def test_footer_ranges_cover_the_columns_whose_stats_parquet_computes_exactly(tmp_path: Path) -> None:
    writer, schema = _writer(tmp_path, ALL_TYPES)
    names = [f.name for f in schema.fields]
    covered = {names[i] for i in FooterColumns.of(writer.arrow_schema, names, [f.type for f in schema.fields]).leaf}
    assert covered == {"id", "b", "i8", "i16", "i32", "s", "d"}  # no floats (NaN), decimals, times, binaries


def test_every_type_and_piece_matches_the_computed_stats(tmp_path: Path) -> None:
    writer, schema = _writer(tmp_path, ALL_TYPES)
    data = all_types_table().sort_by("id")
    rng = random.Random(3)
    n = data.num_rows
    pieces = [data.slice(a, b - a) for a in range(n) for b in range(a + 1, n + 1)]
    pieces += [data.take(sorted(rng.sample(range(n), k))) for k in range(1, n + 1)]
    for piece in pieces:
        (meta,) = writer.write(_system(piece), level=0)
        _expected(schema, piece, meta)


def test_chunks_row_groups_nested_columns_nulls_and_long_strings(tmp_path: Path) -> None:
    """One file from several rolling writes: a chunk that is all null in ``s``, one with a value
    longer than parquet-cpp keeps statistics for (its range is computed, not dropped), covered
    columns after nested ones (the footer's leaf numbering),"""
    arrow = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        ("r", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("s", pa.string()),
        ("n", pa.int32()),
    ])
    writer, schema = _writer(tmp_path, arrow)

    def rows(ids: range, s: list[str | None]) -> pa.Table:
        k = len(ids)
        return pa.table({
            "id": pa.array(list(ids), pa.int64()),
            "r": pa.array([{"x": i, "y": ["a"]} for i in ids], arrow.field("r").type),
            "m": pa.array([[("k", i)] for i in ids], arrow.field("m").type),
            "s": pa.array((s * k)[:k], pa.string()),
            "n": pa.array([None if i % 3 else -i for i in ids], pa.int32()),
        })

    long = "z" * (4 * FOOTER_STRING_BYTES + 100)  # parquet-cpp keeps no range beyond 4 KiB
    chunks = [rows(range(0, 5), [None]), rows(range(5, 12), ["m", long, "b"]), rows(range(12, 20), ["zz", "a"])]
    rolling = writer.rolling(level=0)
    for c in chunks:
        rolling.write(_system(c))
    (meta,) = rolling.close()
    assert pq.ParquetFile(str(tmp_path / "t" / meta.file_name)).metadata.num_row_groups == len(chunks)
    whole = pa.concat_tables(chunks)
    _expected(schema, whole, meta)

"""Parquet reads through dictionaries (`formats.parquet_read`, `formats.parquet_footer`).

Dictionary-only string columns are read as dictionaries and expanded with one take; chunks whose
pages fell back to plain encoding are read plainly (pyarrow would hash every value into a new
dictionary). Either way, and with a deletion vector's row selection, the result is the table a
plain `pq.ParquetFile.read` gives, filtered.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.parquet_footer import file_page_encodings
from lake_assets.formats.parquet_read import dictionary_columns, iter_parquet, read_parquet


def _write(path: Path, table: pa.Table, **kwargs: object) -> str:
    pq.write_table(table, path, compression="zstd", **kwargs)
    return str(path)


def _mixed(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    few = [None if i % 11 == 0 else f"v{i % 37}" for i in range(n)]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "few": pa.array(few, pa.string()),                       # repeats: dictionary throughout
        "many": pa.array([f"unique-{i:09d}" for i in range(n)]),  # outgrows the dictionary page
        "raw": pa.array([bytes([i % 5]) * 3 for i in range(n)], pa.binary()),
        "x": pa.array(rng.random(n)),
    })


def test_footer_walk_tells_fallback_pages_from_dictionary_pages(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.parquet", _mixed(20_000), dictionary_pagesize_limit=4096, row_group_size=7_000)
    pf = pq.ParquetFile(path)
    names = [pf.metadata.schema.column(j).path for j in range(pf.metadata.num_columns)]
    groups = file_page_encodings(pf.metadata)
    assert len(groups) == pf.metadata.num_row_groups == 3
    for group in groups:
        stats = dict(zip(names, group, strict=True))
        assert (0, 0) in stats["many"] and (0, 8) in stats["many"]   # dictionary pages, then plain ones
        assert (0, 0) not in stats["few"] and (0, 8) in stats["few"]
    # pyarrow's own metadata cannot tell them apart: both list PLAIN (the dictionary page's)
    rg = pf.metadata.row_group(0)
    assert rg.column(names.index("many")).encodings == rg.column(names.index("few")).encodings
    assert dictionary_columns(pf, None) == ["few", "raw"]
    assert dictionary_columns(pf, ["id", "raw"]) == ["raw"]


def test_footer_walk_can_stop_after_the_last_column_needed(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.parquet", _mixed(20_000), dictionary_pagesize_limit=4096, row_group_size=7_000)
    md = pq.ParquetFile(path).metadata
    whole = file_page_encodings(md)
    for upto in range(md.num_columns):
        cut = file_page_encodings(md, upto=upto)
        assert cut[:-1] == whole[:-1]                 # earlier row groups: every column
        assert cut[-1] == whole[-1][:upto + 1]        # the last one ends at the column asked for
    single = _write(tmp_path / "one.parquet", _mixed(3_000))
    assert file_page_encodings(pq.ParquetFile(single).metadata, upto=1) == [
        file_page_encodings(pq.ParquetFile(single).metadata)[0][:2]]


def test_files_without_dictionaries_or_without_strings_read_plainly(tmp_path: Path) -> None:
    table = _mixed(3_000)
    assert dictionary_columns(pq.ParquetFile(_write(tmp_path / "a.parquet", table, use_dictionary=False)), None) == []
    assert dictionary_columns(pq.ParquetFile(_write(tmp_path / "b.parquet", table.select(["id", "x"]))), None) == []
    empty = _write(tmp_path / "c.parquet", table.slice(0, 0))  # no data pages: either way is right
    assert read_parquet(empty, None, use_threads=False).equals(pq.read_table(empty))
    assert read_parquet(empty, None, use_threads=False, keep=np.ones(0, dtype=bool)).num_rows == 0


@pytest.mark.parametrize("row_group_size", [7_000, 100_000])
def test_reads_equal_pyarrow_with_and_without_a_selection(tmp_path: Path, row_group_size: int) -> None:
    table = _mixed(20_000)
    path = _write(tmp_path / "f.parquet", table, dictionary_pagesize_limit=4096, row_group_size=row_group_size)
    plain = pq.ParquetFile(path).read()
    keep = np.ones(table.num_rows, dtype=bool)
    keep[np.random.default_rng(1).choice(table.num_rows, 700, replace=False)] = False
    keep[:3] = False
    keep[-1] = False
    for columns in (None, ["few"], ["raw", "id", "many"], []):
        want = plain if columns is None else plain.select(columns)
        got = read_parquet(path, columns, use_threads=True)
        assert got.equals(want) and got.schema.equals(want.schema, check_metadata=True)
        got = read_parquet(path, columns, use_threads=False, keep=keep)
        assert got.equals(want.filter(pa.array(keep))) and got.schema == want.schema
    pieces = list(iter_parquet(path, ["few", "id"], batch_rows=3_000))
    assert all(p.num_rows <= 3_000 for p in pieces)
    assert pa.concat_tables(pieces).equals(plain.select(["few", "id"]))
    assert pa.concat_tables(iter_parquet(path, None)).equals(plain)


def test_a_selection_of_another_length_is_corrupt_metadata(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.parquet", _mixed(100))
    with pytest.raises(CorruptMetadataError, match="100 rows"):
        read_parquet(path, None, use_threads=False, keep=np.ones(101, dtype=bool))


def test_deletion_vector_table_projections_and_schema_versions(tmp_path: Path) -> None:
    """A compacted deletion-vector table read file by file: string columns through their
    dictionaries with the vectors' rows dropped, across a rename and an added column."""
    schema = pa.schema([("k", pa.int64()), ("tag", pa.string()), ("n", pa.int64())])
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema, primary_keys=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write_arrow(pa.table({"k": range(3000), "tag": [f"t{i % 13}" for i in range(3000)],
                                "n": range(3000)}, schema=schema))
    table.write_arrow(pa.table({"k": range(0, 3000, 7), "tag": ["upd"] * 429, "n": [-1] * 429}, schema=schema))
    table.update_schema().rename_column("tag", "label").add_column("note", pa.string()).commit()
    table = Catalog(str(tmp_path)).get_table("db.t")
    files = [f for s in table.plan() for f in s.files]
    assert len(files) >= 2 and all(f.level > 0 for f in files)
    assert sum(r["deletion_vector_rows"] for r in table.health().to_pylist()) > 0
    for f in files:  # the fast path is the one taken
        path = table.store.data_file_path(table.plan()[0].partition, 0, f)
        assert "tag" in dictionary_columns(pq.ParquetFile(path), None)
    want = {k: (f"t{k % 13}" if k % 7 else "upd", k if k % 7 else -1) for k in range(3000)}
    got = table.to_arrow()
    assert got.num_rows == 3000
    assert {r["k"]: (r["label"], r["n"]) for r in got.to_pylist()} == want
    assert got.column("note").null_count == 3000
    assert sorted(table.to_arrow(columns=["label"]).column(0).to_pylist()) == sorted(v[0] for v in want.values())
    streamed = pa.concat_tables(pa.Table.from_batches([b]) for b in table.to_batches(batch_size=500))
    assert streamed.sort_by("k").equals(got.sort_by("k"))


def test_large_string_and_binary_columns_keep_their_type(tmp_path: Path) -> None:
    # pyarrow reads a large_string (large_binary) column as a dictionary of string (binary) values;
    # expanding it must give back the file's type (a valid file was reported corrupt before)
    n = 5_000
    table = pa.table({
        "k": pa.array(np.arange(n, dtype=np.int64)),
        "ls": pa.array([None if i % 13 == 0 else f"v{i % 17}" for i in range(n)], pa.large_string()),
        "lb": pa.array([bytes([i % 3]) * 2 for i in range(n)], pa.large_binary()),
    })
    path = _write(tmp_path / "large.parquet", table, row_group_size=2_000)
    assert dictionary_columns(pq.ParquetFile(path), None) == ["ls", "lb"]
    plain = pq.ParquetFile(path).read()
    assert plain.schema.field("ls").type == pa.large_string()
    keep = np.ones(n, dtype=bool)
    keep[::7] = False
    got = read_parquet(path, None, use_threads=False)
    assert got.equals(plain) and got.schema == plain.schema
    got = read_parquet(path, ["lb", "ls"], use_threads=True, keep=keep)
    want = plain.select(["lb", "ls"])
    assert got.equals(want.filter(pa.array(keep))) and got.schema == want.schema
    assert pa.concat_tables(iter_parquet(path, None, batch_rows=1_500)).equals(plain)

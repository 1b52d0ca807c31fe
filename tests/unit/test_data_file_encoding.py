"""Data files are laid out to decode fast: a flush up to the target size is one row group, and a
string column gets dictionary pages only when its values repeat (a mostly-distinct column would
be dictionary-encoded, then fall back to plain mid-chunk, and readers would decode both)."""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.formats.data_file import DataFileWriter

SCHEMA = pa.schema([("k", pa.int64()), ("name", pa.string()), ("status", pa.string()), ("v", pa.float64())])


def _rows(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    names = [f"name-{x:012d}" for x in rng.permutation(n * 10)[:n]]
    return pa.table({"k": np.arange(n), "name": names, "status": rng.choice(["new", "open", "done"], n),
                     "v": rng.standard_normal(n)}, schema=SCHEMA)


def _data_files(warehouse: str) -> list[pq.ParquetFile]:
    return [pq.ParquetFile(p) for p in sorted(glob.glob(f"{warehouse}/db.db/t/bucket-*/data-*.parquet"))]


def _encodings(pf: pq.ParquetFile, column: str) -> set[str]:
    out: set[str] = set()
    for rg in range(pf.num_row_groups):
        md = pf.metadata.row_group(rg)
        for c in range(md.num_columns):
            if md.column(c).path_in_schema == column:
                out |= set(md.column(c).encodings)
                out |= {"DICT_PAGE"} if md.column(c).has_dictionary_page else set()
    return out


def test_a_flush_within_the_target_size_is_one_row_group(catalog, warehouse) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_rows(300_000))  # more than the former fixed 256K-row row groups
    (pf,) = _data_files(warehouse)
    assert pf.metadata.num_rows == 300_000
    assert pf.num_row_groups == 1


def test_rolled_files_are_a_large_row_group_and_a_small_last_one(catalog, warehouse) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "target-file-size": "1 mb"})
    t.write_arrow(_rows(200_000))
    files = _data_files(warehouse)
    assert len(files) >= 3
    # the first file sizes its first row group from the Arrow size; later ones are predicted from
    # the bytes per row of the files before them: a row group up to a check point ~3% short of the
    # target, measured, then one to Java's rolling point (rolling_writer.PREDICTION_MARGIN)
    for pf in files[1:-1]:
        groups = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
        assert len(groups) <= 2, groups
        assert sum(groups[1:]) <= pf.metadata.num_rows // 16 + 1000, groups
    assert t.to_arrow().sort_by("k").column("name").equals(_rows(200_000).column("name"))


def test_only_repeating_strings_get_a_dictionary(catalog, warehouse) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_rows(50_000))
    (pf,) = _data_files(warehouse)
    assert "DICT_PAGE" not in _encodings(pf, "name")  # all distinct: plain, no mid-chunk fallback
    assert "DICT_PAGE" in _encodings(pf, "status")  # three values: dictionary


def test_data_pages_are_parquet_javas_size_whatever_page_size_says(catalog) -> None:
    """Paimon's ``page-size`` sizes its write-buffer memory pages; its Parquet writer leaves
    ``parquet.page.size`` at parquet-java's 1 MiB, and so do we (64 KiB pages decoded slower)."""
    for name, opts in (("db.default", {}), ("db.small_pages", {"page-size": "16 kb"})):
        t = catalog.create_table(name, SCHEMA, primary_keys=["k"], options={"bucket": "1", **opts})
        writer = DataFileWriter(t.store.file_io, "unused", t.store.schema, t.store.data_file_config())
        assert writer.parquet_options()["data_page_size"] == 1024 * 1024


def test_the_key_copy_shares_the_key_columns_buffers(catalog) -> None:
    """``_KEY_k`` is the value column ``k`` itself in the laid-out table: no copy before encoding."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    writer = DataFileWriter(t.store.file_io, "unused", t.store.schema, t.store.data_file_config())
    data = _rows(1000).append_column("_SEQUENCE_NUMBER", pa.array(np.arange(1000)))
    data = data.append_column("_VALUE_KIND", pa.array(np.zeros(1000, np.int8)))
    laid_out = writer._layout(data)
    key, value = laid_out.column("_KEY_k").chunk(0), laid_out.column("k").chunk(0)
    assert key.buffers()[1].address == value.buffers()[1].address == data.column("k").chunk(0).buffers()[1].address


def test_data_pages_use_only_encodings_paimon_java_0_9_decodes(catalog, warehouse) -> None:
    """Paimon 0.9's vectorized Parquet reader decodes PLAIN and dictionary pages only: a
    DELTA_BINARY_PACKED ``_SEQUENCE_NUMBER`` or key column (cheaper to write for sorted integers)
    fails there with "Unsupported encoding: DELTA_BINARY_PACKED" (checked with the oracle JVM)."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write_arrow(_rows(50_000))
    t.write_arrow(_rows(20_000, seed=1))
    for pf in _data_files(warehouse):
        for rg in range(pf.num_row_groups):
            md = pf.metadata.row_group(rg)
            for c in range(md.num_columns):
                assert set(md.column(c).encodings) <= {"PLAIN", "RLE", "RLE_DICTIONARY", "PLAIN_DICTIONARY"}


def test_a_string_partition_column_gets_a_dictionary_without_sampling(catalog, warehouse) -> None:
    from lake_assets.formats.file_layout import layout_of

    schema = pa.schema([*SCHEMA, ("dt", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    layout = layout_of(t.store.schema)
    assert "dt" in layout.dictionary_columns and "dt" not in layout.sampled_dictionary_columns
    assert "name" in layout.sampled_dictionary_columns
    rows = _rows(20_000)
    t.write_arrow(rows.append_column("dt", pa.array(["2024-01-01"] * 10_000 + ["2024-01-02"] * 10_000)))
    files = [pq.ParquetFile(p) for p in sorted(glob.glob(f"{warehouse}/db.db/t/dt=*/bucket-0/data-*.parquet"))]
    assert len(files) == 2
    for pf in files:
        assert "DICT_PAGE" in _encodings(pf, "dt")
        assert "DICT_PAGE" not in _encodings(pf, "name")  # mostly distinct: plain


NUMERIC = pa.schema([("k", pa.int64()), ("i16", pa.int16()), ("i32", pa.int32()), ("u64", pa.int64()),
                     ("f32", pa.float32()), ("f64", pa.float64()), ("d", pa.date32()), ("t", pa.time32("ms")),
                     ("ts", pa.timestamp("us")), ("dec", pa.decimal128(10, 2)), ("wide", pa.decimal128(38, 9))])


def _numeric_rows(n: int, distinct: int) -> pa.Table:
    """Every value column cycles through ``distinct`` values; ``k`` never repeats."""
    c = np.arange(n) % distinct
    return pa.table({"k": np.arange(n), "i16": c.astype(np.int16), "i32": c.astype(np.int32),
                     "u64": c * 1_000_003, "f32": c.astype(np.float32) / 4, "f64": c * 0.5,
                     "d": pa.array(c.astype(np.int32), pa.int32()).cast(pa.date32()),
                     "t": pa.array(c.astype(np.int32), pa.int32()).cast(pa.time32("ms")),
                     "ts": pa.array(c * 1_000_000, pa.int64()).cast(pa.timestamp("us")),
                     "dec": pa.array(c, pa.int64()).cast(pa.decimal128(21, 2)).cast(pa.decimal128(10, 2)),
                     "wide": pa.array(c, pa.int64()).cast(pa.decimal128(38, 9))}, schema=NUMERIC)


def test_repeating_fixed_width_columns_get_a_dictionary(catalog, warehouse) -> None:
    """Issue 14: fixed-width columns whose values repeat are dictionary-encoded (they decode
    faster than PLAIN pages), every data page within the dictionary (no fallback mid-chunk);
    the unique key, its copy and ``_SEQUENCE_NUMBER`` stay PLAIN."""
    t = catalog.create_table("db.t", NUMERIC, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_numeric_rows(200_000, 100))
    (pf,) = _data_files(warehouse)
    for name in NUMERIC.names[1:]:
        assert _encodings(pf, name) == {"DICT_PAGE", "PLAIN", "RLE", "RLE_DICTIONARY"}, name
    for name in ("k", "_KEY_k", "_SEQUENCE_NUMBER"):
        assert "DICT_PAGE" not in _encodings(pf, name), name
    assert t.to_arrow().sort_by("k").cast(NUMERIC).equals(_numeric_rows(200_000, 100))


def test_mostly_distinct_fixed_width_columns_stay_plain(catalog, warehouse) -> None:
    t = catalog.create_table("db.t", NUMERIC, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_numeric_rows(50_000, 40_000))
    (pf,) = _data_files(warehouse)
    for name in NUMERIC.names:
        assert "DICT_PAGE" not in _encodings(pf, name), name


def test_a_fixed_width_dictionary_stays_within_one_dictionary_page() -> None:
    """Values that repeat in the sample but whose dictionary over the whole file would outgrow
    pyarrow's dictionary page (where it falls back to PLAIN mid-chunk) get none."""
    from lake_assets.formats.file_layout import DICTIONARY_PAGE_BYTES, dictionary_pays

    sample = pa.array(np.arange(4096) // 2)  # 2048 distinct int64 in 4096 rows
    assert dictionary_pays(sample, 4096)
    too_many = DICTIONARY_PAGE_BYTES // 8 * 2 + 4096  # rows whose extrapolated dictionary > 1 page
    assert not dictionary_pays(sample, too_many)
    assert dictionary_pays(pa.array(np.arange(4096) % 100), 10_000_000)  # domain seen: 100 values


def test_the_quick_reject_of_distinct_numbers_keeps_small_random_domains() -> None:
    """A look at the first rows rejects never-repeating numbers cheaply; values drawn at random
    from a domain the full sample accepts still repeat within those rows, so still get one."""
    from lake_assets.formats.file_layout import dictionary_pays

    rng = np.random.default_rng(3)
    assert dictionary_pays(pa.array(rng.integers(0, 1500, 4096)), 100_000)
    assert dictionary_pays(pa.array(rng.integers(0, 1500, 4096).astype(np.float64)), 100_000)
    assert not dictionary_pays(pa.array(rng.integers(0, 10**9, 4096)), 100_000)
    assert not dictionary_pays(pa.array(np.arange(4096)), 100_000)

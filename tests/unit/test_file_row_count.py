"""`FileFormat.row_count`: a data file's rows by its own metadata, in every format.

A read that must size something before it decodes (a deletion vector's keep mask, a read of no
file column) takes this count and checks the manifest's ``_ROW_COUNT`` against it
(`lake_assets.ops.file_rows`); Parquet's comes from its footer (the cached one when a read parsed it
before), ORC's from its tail, Avro's from its blocks' record counts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, CorruptMetadataError
from lake_assets.errors import MissingDataFileError
from lake_assets.formats.data_file_read import data_file_row_count
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE
from lake_assets.ops.file_rows import checked_row_count
from tests.reliability.test_trust_row_counts import _fresh
from tests.reliability.test_trust_stored_numbers import _craft

FORMATS = ["parquet", "orc", "avro"]
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def _table(tmp: Path, fmt: str, rows: int):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "-1", "file.format": fmt, "deletion-vectors.enabled": "true",
                                      "read.batch-size": "7"})
    # several Avro blocks and Parquet row groups: the count is their sum
    t.write_arrow(pa.table({"k": list(range(rows)), "v": [str(i % 7) for i in range(rows)], "dt": ["d"] * rows},
                           schema=SCHEMA))
    return t


def _files(t):  # type: ignore[no-untyped-def]
    entries = t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
    return [(t.store.data_file_path(e.partition, e.bucket, e.file), e.file) for e in entries]


@pytest.mark.parametrize("fmt", FORMATS)
def test_row_count_of_each_format_is_the_rows_written(tmp_path: Path, fmt: str) -> None:
    t = _table(tmp_path, fmt, 2500)
    [(path, meta)] = _files(t)
    FOOTER_CACHE.clear()
    assert data_file_row_count(t.store.file_io, path) == 2500
    assert checked_row_count(t.store, path, meta) == 2500
    with pytest.raises(CorruptMetadataError, match=r"holds 2500 rows, but its manifest entry says 2501 \(_ROW_COUNT\)"):
        checked_row_count(t.store, path, dataclasses.replace(meta, row_count=2501))


@pytest.mark.parametrize("fmt", FORMATS)
def test_deletion_vector_read_of_a_damaged_count_is_refused_in_each_format(tmp_path: Path, fmt: str) -> None:
    """The keep mask and a partition-only read are sized by the file's own rows, never the manifest's."""
    t = _table(tmp_path, fmt, 40)
    t.delete_where([("k", "<", 5)])
    assert t.to_arrow(columns=["dt"]).num_rows == 35
    assert sum(b.num_rows for b in t.to_batches(columns=["dt"], batch_size=8)) == 35
    [(_, meta)] = _files(t)
    damaged = dataclasses.replace(meta, row_count=2**40)
    _craft(t, lambda f: damaged if f.file_name == meta.file_name else f)
    _fresh()
    t = t.refresh()
    for columns in (["dt"], ["k", "dt"]):
        with pytest.raises(CorruptMetadataError, match=r"holds 40 rows, but its manifest entry says 1099511627776"):
            t.to_arrow(columns=columns)
        with pytest.raises(CorruptMetadataError, match=r"holds 40 rows, but its manifest entry says 1099511627776"):
            list(t.to_batches(columns=columns, batch_size=8))


def test_whole_file_batches_past_the_manifest_count_are_refused_before_they_are_returned(tmp_path: Path) -> None:
    """A batched read without a vector learns the file's count as it goes: the first batch past the
    manifest's count raises, and none of its rows is returned."""
    t = _table(tmp_path, "parquet", 30)
    [(_, meta)] = _files(t)
    _craft(t, lambda f: dataclasses.replace(f, row_count=12) if f.file_name == meta.file_name else f)
    _fresh()
    got = []
    with pytest.raises(CorruptMetadataError, match=r"holds more than 12 rows, but its manifest entry says 12"):
        for b in t.refresh().to_batches(columns=["k"], batch_size=8):
            got.append(b.num_rows)
    assert sum(got) <= 12


def test_a_parsed_footer_serves_the_count_only_where_a_read_of_the_file_follows(tmp_path: Path) -> None:
    """With the manifest's size the cached footer answers without opening the file (the read that
    follows meets a missing one); without it the file is opened, so a partition-only read of a
    deleted file fails as a read of its columns does."""
    t = _table(tmp_path, "parquet", 30)
    t.delete_where([("k", "=", 3)])
    [(path, meta)] = _files(t)
    assert t.to_arrow(columns=["k"]).num_rows == 29  # parses and caches the footer
    Path(path).unlink()
    assert data_file_row_count(t.store.file_io, path, meta.file_size) == 30  # no open
    with pytest.raises(MissingDataFileError):
        data_file_row_count(t.store.file_io, path)
    for columns in (["dt"], ["k"]):
        with pytest.raises(MissingDataFileError):
            t.to_arrow(columns=columns)


def test_a_parsed_footer_serves_a_count_of_a_file_that_is_there_without_opening_it(tmp_path: Path) -> None:
    """Without the manifest's size the cached footer serves once a stat finds the file at the size
    it was parsed at (a partition-only read opens no file it read before); a file of another
    size at that path is opened and its own footer counted."""
    t = _table(tmp_path, "parquet", 30)
    [(path, meta)] = _files(t)
    fio = t.store.file_io
    FOOTER_CACHE.clear()
    opened: list[str] = []
    real_open = fio.open_input

    def counting_open(p: str) -> pa.NativeFile:
        opened.append(p)
        return real_open(p)

    fio.open_input = counting_open  # type: ignore[method-assign]
    assert data_file_row_count(fio, path) == 30  # nothing parsed yet: opened
    assert opened == [path]
    assert data_file_row_count(fio, path) == 30  # parsed before, same size: a stat only
    assert checked_row_count(t.store, path, meta) == 30
    assert t.to_arrow(columns=["dt"]).column("dt").to_pylist() == ["d"] * 30  # partition-only: no open either
    assert opened == [path]
    # the same name, other bytes (a rewrite in place): the footer parsed before no longer serves
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"k": list(range(11))}), other)
    assert other.stat().st_size != meta.file_size
    Path(path).write_bytes(other.read_bytes())
    assert data_file_row_count(fio, path) == 11
    assert opened == [path, path]
    with pytest.raises(CorruptMetadataError, match=r"holds 11 rows, but its manifest entry says 30"):
        checked_row_count(t.store, path, meta)

"""Batched Parquet reads hold a bounded part of each column chunk (``read.parquet.buffer-size``)
and take footers from the footer cache (issue 17 §2).

Counted, not timed: the reads a file sees (a recording file object under `pa.PythonFile`: the
largest single read is what pyarrow's reader holds of a column chunk at once) and the bytes
Arrow's memory pool holds between batches.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import MissingDataFileError
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE
from lake_assets.formats.parquet_read import iter_parquet
from lake_assets.io.local import LocalFileIO
from lake_assets.ops.compact import memory

CHUNK_ROWS = 1_000_000  # one int64 column of random values: an 8 MB column chunk
BUFFER = 256 * 1024
# what a buffered read takes beyond its buffer to finish a page it cut: at most a page (64 KiB
# and 16 KiB below) and its header
PAGE_SLACK = 64 * 1024 + 1024


class RecordingFile(io.FileIO):
    """A local file that records the size of each read pyarrow makes of it."""

    reads: list[int]

    def __init__(self, path: str) -> None:
        super().__init__(path, "rb")
        self.reads = []

    def read(self, size: int = -1, /) -> bytes:
        data = super().read(size)
        self.reads.append(len(data))
        return data


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    FOOTER_CACHE.clear()
    yield
    FOOTER_CACHE.clear()


@pytest.fixture
def big_chunks(tmp_path: Path) -> str:
    """One row group of two columns: random int64 (8 MB compressed) and dictionary-encoded strings."""
    rng = np.random.default_rng(7)
    table = pa.table({"a": rng.integers(0, 1 << 62, CHUNK_ROWS),
                      "s": pa.array([f"v{i % 5000}" for i in range(CHUNK_ROWS)])})
    path = str(tmp_path / "big.parquet")
    # pages below the buffer: a page larger than the buffer is read whole (a dictionary page, up
    # to 1 MiB, which random values would fill before the writer falls back to plain pages)
    pq.write_table(table, path, row_group_size=CHUNK_ROWS, data_page_size=64 * 1024, use_dictionary=["s"])
    return path


def _chunk_bytes(path: str, column: int) -> int:
    return int(pq.ParquetFile(path).metadata.row_group(0).column(column).total_compressed_size)


@pytest.mark.parametrize("buffer_bytes", [0, BUFFER])
def test_a_batched_read_reads_column_chunks_buffer_bytes_at_a_time(big_chunks: str, buffer_bytes: int) -> None:
    recording = RecordingFile(big_chunks)
    with pa.PythonFile(recording, mode="r") as source:
        rows = sum(b.num_rows for b in iter_parquet(source, None, 4096, buffer_bytes=buffer_bytes))
    assert rows == CHUNK_ROWS
    assert sum(recording.reads) >= _chunk_bytes(big_chunks, 0)  # the whole chunk was read ...
    if buffer_bytes:
        # ... never more than the buffer at once, topped up to the end of a page it cut
        assert max(recording.reads) <= BUFFER + PAGE_SLACK
    else:
        assert max(recording.reads) >= _chunk_bytes(big_chunks, 0)  # ... at once: pyarrow's default


@pytest.mark.parametrize("buffer_bytes", [0, BUFFER])
def test_the_bytes_a_batched_read_holds_between_batches(big_chunks: str, buffer_bytes: int) -> None:
    chunks = _chunk_bytes(big_chunks, 0) + _chunk_bytes(big_chunks, 1)
    held = []
    with pa.OSFile(big_chunks, "rb") as source:
        start = pa.total_allocated_bytes()
        for batch in iter_parquet(source, None, 4096, buffer_bytes=buffer_bytes):
            held.append(pa.total_allocated_bytes() - start - batch.nbytes)
            del batch
    if buffer_bytes:
        # per column: the buffer, a decoded page and the decoded dictionary (`memory.run_reader_bytes`)
        assert max(held) <= 2 * (BUFFER + 2 * memory.PARQUET_PAGE_BYTES) < chunks
    else:
        assert max(held) >= chunks  # the whole compressed row group, held while it is read


def _table(tmp_path: Path, buffer: str) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    # small merge steps: the compaction streams its runs (`iter_file`) rather than reading them whole
    return cat.create_table("db.t", schema, primary_keys=["id"],
                            options={"bucket": "1", "read.parquet.buffer-size": buffer,
                                     "parquet.page.size": "16384", "compaction.merge-rows": "1000"})


def _rows(ids: np.ndarray, seed: int) -> pa.Table:
    values = np.random.default_rng(seed).integers(0, 1 << 62, len(ids))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(values, pa.int64())})


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[RecordingFile]:
    """Every file the table's local file IO opens for reading, recording its reads."""
    opened: list[RecordingFile] = []

    def open_input(self: LocalFileIO, path: str) -> pa.NativeFile:
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        f = RecordingFile(path)
        opened.append(f)
        return pa.PythonFile(f, mode="r")

    monkeypatch.setattr(LocalFileIO, "open_input", open_input)
    return opened


def _largest_data_read(opened: list[RecordingFile]) -> int:
    return max((max(f.reads, default=0) for f in opened if os.path.basename(f.name).startswith("data-")), default=0)


@pytest.mark.parametrize(("buffer", "bounded"), [("64 kb", True), ("0 b", False)])
def test_the_table_option_bounds_to_batches_and_compaction(
        tmp_path: Path, recorded: list[RecordingFile], buffer: str, bounded: bool) -> None:
    t = _table(tmp_path, buffer)
    t.write_arrow(_rows(np.arange(0, 400_000, 2), 1))
    t.write_arrow(_rows(np.arange(0, 400_000, 3), 2))
    metas = [pq.ParquetFile(p).metadata for p in _data_files(tmp_path)]
    chunk = max(m.row_group(0).column(j).total_compressed_size for m in metas for j in range(m.num_columns))
    assert chunk > 8 * 64 * 1024  # the random values' column
    recorded.clear()
    assert sum(b.num_rows for b in t.to_batches(batch_size=1000)) == len(set(range(0, 400_000, 2)) |
                                                                       set(range(0, 400_000, 3)))
    assert (_largest_data_read(recorded) <= 64 * 1024 + PAGE_SLACK) is bounded
    recorded.clear()
    t.compact(full=True)
    assert (_largest_data_read(recorded) <= 64 * 1024 + PAGE_SLACK) is bounded


def _data_files(tmp_path: Path) -> list[str]:
    return [str(p) for p in (tmp_path / "wh").rglob("data-*.parquet")]


class CountingParquetFile(pq.ParquetFile):
    """`pq.ParquetFile` counting the opens that parse a footer (no parsed metadata given)."""

    parsed = 0

    def __init__(self, source: Any, **kwargs: Any) -> None:
        if kwargs.get("metadata") is None:
            CountingParquetFile.parsed += 1
        super().__init__(source, **kwargs)


def test_batched_and_streaming_reads_reuse_cached_footers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path, "1 mb")
    t.write_arrow(_rows(np.arange(0, 30_000, 2), 1))
    t.write_arrow(_rows(np.arange(0, 30_000, 3), 2))
    expected = len(set(range(0, 30_000, 2)) | set(range(0, 30_000, 3)))
    monkeypatch.setattr(pq, "ParquetFile", CountingParquetFile)
    CountingParquetFile.parsed = 0
    assert sum(b.num_rows for b in t.to_batches(batch_size=1000)) == expected
    files = len(_data_files(tmp_path))
    assert CountingParquetFile.parsed == files and len(FOOTER_CACHE) == files
    assert sum(b.num_rows for b in t.to_batches(batch_size=1000, columns=["v"])) == expected
    stream = t.stream(mode="latest-full")
    reader = t.change_reader()
    assert sum(reader.read(s).num_rows for b in stream.poll(max_snapshots=5) for s in b.splits) == expected
    assert CountingParquetFile.parsed == files  # no footer parsed again, whatever the columns


def test_a_deleted_file_fails_a_batched_read_after_its_footer_was_cached(tmp_path: Path) -> None:
    t = _table(tmp_path, "1 mb")
    t.write_arrow(_rows(np.arange(0, 30_000, 2), 1))
    t.write_arrow(_rows(np.arange(0, 30_000, 3), 2))
    assert sum(b.num_rows for b in t.to_batches(batch_size=1000)) > 0
    assert len(FOOTER_CACHE) > 0
    os.remove(_data_files(tmp_path)[0])
    with pytest.raises(MissingDataFileError):
        sum(b.num_rows for b in t.to_batches(batch_size=1000))


def test_a_file_rewritten_with_another_size_is_parsed_again_by_a_batched_read(tmp_path: Path) -> None:
    path = str(tmp_path / "f.parquet")
    pq.write_table(_rows(np.arange(100), 1), path)
    with pa.OSFile(path, "rb") as src:
        assert sum(b.num_rows for b in iter_parquet(src, None, 10, footer_key=path, buffer_bytes=BUFFER)) == 100
    pq.write_table(_rows(np.arange(250), 2), path)
    with pa.OSFile(path, "rb") as src:
        assert sum(b.num_rows for b in iter_parquet(src, ["v"], 10, footer_key=path, buffer_bytes=BUFFER)) == 250

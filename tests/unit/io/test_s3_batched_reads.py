"""Batched Parquet reads on S3 ask for few bounded ranges and hold what they ask (issue 17 §2).

A real S3 API (moto's server on loopback) behind a proxy that records every GET and the size of
its answer: a batched read (`iter_data_file`, what ``Table.to_batches``, streams and compaction's
run readers use) holds at most ``read.parquet.buffer-size`` per column (at least
`S3FileIO.min_chunked_read`) through the native client or through s3fs without its read-ahead
cache (which fetched up to 50 MiB, a whole file, per miss), and within that bound fetches a row
group's chunks in as few GETs as it can (`formats.parquet_chunk_plan`). Counted, not timed.
"""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.formats.data_file_read import iter_data_file
from lake_assets.formats.parquet_chunk_plan import HOLE_BYTES
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE
from lake_assets.formats.parquet_read import iter_parquet
from lake_assets.io import FileIO, LocalFileIO, S3FileIO
from lake_assets.ops.compact import memory
from tests.reliability.fault_proxy import FaultProxy

MiB = 1024 * 1024
ROWS = 1_300_000  # random int64 values: a column chunk of ~10.4 MB, above S3's 8 MiB ask
PAGE = 64 * 1024
# what a buffered read asks beyond its buffer to finish a page it cut: a page and its header
PAGE_SLACK = PAGE + 1024


class CountingProxy(FaultProxy):
    """The reliability suite's proxy, recording each GET's path and answer size."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.gets: list[tuple[str, int]] = []

    def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        status, head, data = super()._forward(method, path, headers, body)
        if method == "GET":
            with self.lock:
                self.gets.append((path, len(data)))
        return status, head, data

    def data_gets(self, name: str) -> list[int]:
        return [n for p, n in self.gets if p.split("?")[0].endswith(name)]


@pytest.fixture(autouse=True)
def _empty_footer_cache() -> Iterator[None]:
    FOOTER_CACHE.clear()
    yield
    FOOTER_CACHE.clear()


@pytest.fixture
def proxy(s3_server: str) -> Iterator[CountingProxy]:
    p = CountingProxy(s3_server).start()
    yield p
    p.stop()


def _options(s3_warehouse: tuple[str, dict[str, Any]], proxy: CountingProxy, client: str) -> dict[str, Any]:
    _, opts = s3_warehouse
    opts = {**opts, "client_kwargs": {**opts["client_kwargs"], "endpoint_url": proxy.endpoint}}
    if client == "s3fs":  # an option the native client has no equivalent of: s3fs serves reads
        opts["config_kwargs"] = {"signature_version": "s3v4"}
    return opts


def _s3(s3_warehouse: tuple[str, dict[str, Any]], opts: dict[str, Any], client: str) -> tuple[FileIO, str]:
    fio, root = FileIO.for_url(s3_warehouse[0], **opts)
    assert isinstance(fio, S3FileIO)
    assert (fio._native is None) == (client == "s3fs")
    return fio, root


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One row group: random int64 (~10.4 MB compressed) and dictionary-encoded strings."""
    rng = np.random.default_rng(11)
    table = pa.table({"a": rng.integers(0, 1 << 62, ROWS), "s": pa.array([f"v{i % 5000}" for i in range(ROWS)])})
    path = tmp_path_factory.mktemp("big") / "data-big.parquet"
    pq.write_table(table, path, row_group_size=ROWS, data_page_size=PAGE, use_dictionary=["s"])
    return path


def _chunks(path: Path) -> list[int]:
    md = pq.ParquetFile(path).metadata
    return [md.row_group(0).column(j).total_compressed_size for j in range(md.num_columns)]


def _read(fio: FileIO, path: str, option: int, expected: pa.Table) -> int:
    """Read ``path`` in 4,096-row batches, checking each against ``expected``; the most bytes held
    between batches: Arrow's pool and Python's allocations (s3fs's answers reach pyarrow as Python
    bytes, outside its pool)."""
    held, offset = [], 0
    FOOTER_CACHE.clear()  # each read parses the footer, as a first read does
    tracemalloc.start()
    try:
        start = pa.total_allocated_bytes() + tracemalloc.get_traced_memory()[0]
        for piece in iter_data_file(fio, path, None, 4096, option):
            held.append(pa.total_allocated_bytes() + tracemalloc.get_traced_memory()[0] - start - piece.nbytes)
            assert piece.equals(expected.slice(offset, piece.num_rows))
            offset += piece.num_rows
            del piece
    finally:
        tracemalloc.stop()
    assert offset == expected.num_rows
    return max(held[1:])


@pytest.mark.parametrize("client", ["native", "s3fs"])
@pytest.mark.parametrize("ask", [8 * MiB, 2 * MiB])
def test_a_batched_read_on_s3_asks_few_bounded_ranges_and_holds_them(
        s3_warehouse: tuple[str, dict[str, Any]], proxy: CountingProxy, big_file: Path, client: str,
        ask: int) -> None:
    """8 MiB (S3's ask): the row group's two chunks (10.5 MB) fit the bound of 2 x 8 MiB and are
    read as the unbounded read reads them. 2 MiB (the same store asking less, to reach the case
    of a row group above the bound at a test's scale): the small chunk whole, the large one
    streamed with the rest of the bound."""
    fio, root = _s3(s3_warehouse, _options(s3_warehouse, proxy, client), client)
    fio.min_chunked_read = ask  # type: ignore[misc]
    path = f"{root}/{big_file.name}"
    fio.write_bytes(path, big_file.read_bytes())
    chunks = _chunks(big_file)
    budget = len(chunks) * ask
    expected = pq.read_table(big_file)  # what a local read gives

    proxy.gets.clear()
    _read(fio, path, 0, expected)
    whole_gets = proxy.data_gets(big_file.name)
    assert max(whole_gets) >= max(chunks)  # the configured 0: whole column chunks, unbounded

    proxy.gets.clear()
    held = _read(fio, path, MiB, expected)
    gets = proxy.data_gets(big_file.name)
    # no GET larger than the bound (topped up to the end of a page a buffer cut): s3fs's
    # read-ahead cache fetched up to 50 MiB past a miss, a whole file here
    assert max(gets) <= budget + PAGE_SLACK
    # between batches: what the columns asked for, a decoded page, a dictionary and a cut page each - no more
    # than the bound compaction prints for this store
    bound = memory.run_reader_bytes(_options_of(MiB), len(chunks), fio)
    assert bound == len(chunks) * (ask + 3 * memory.PARQUET_PAGE_BYTES)
    assert held <= bound
    if sum(chunks) + len(chunks) * HOLE_BYTES <= budget:
        # the row group fits: no more requests than the unbounded read, which holds as much ...
        assert len(gets) == len(whole_gets)
        # ... and fewer than streaming each column with its own ask (session 10)
        proxy.gets.clear()
        with fio.open_input_chunked(path, ask) as src:
            assert sum(b.num_rows for b in iter_parquet(src, None, 4096, buffer_bytes=ask)) == expected.num_rows
        assert len(gets) < len(proxy.data_gets(big_file.name))
        return
    # above the bound: the small chunk in one GET, the large one's in asks of the rest of the
    # bound (pyarrow's buffered stream tops its buffer up by the few bytes a page header it cut
    # lacks, in a request of its own: at most one per refill)
    small, large = sorted(chunks)
    rest = budget - small - HOLE_BYTES
    assert small in gets  # read whole
    assert max(gets) > ask  # the large chunk asked more than its own ask at a time
    assert len(gets) <= 2 + 1 + 2 * math.ceil(large / (rest - PAGE_SLACK))


def _options_of(buffer: int) -> Any:
    from lake_assets.options import CoreOptions

    return CoreOptions({"read.parquet.buffer-size": f"{buffer} b"})


def test_what_a_column_asks_for_at_once_per_store() -> None:
    s3 = S3FileIO.__new__(S3FileIO)
    assert s3.chunked_read_bytes(MiB) == 8 * MiB and s3.chunked_read_bytes(16 * MiB) == 16 * MiB
    assert s3.chunked_read_bytes(0) == 0  # whole column chunks stay whole
    assert LocalFileIO().chunked_read_bytes(MiB) == MiB
    opts = _options_of(MiB)
    assert memory.run_reader_bytes(opts, 3) == 3 * (MiB + 3 * MiB)
    assert memory.run_reader_bytes(opts, 3, s3) == 3 * (8 * MiB + 3 * MiB)
    assert memory.compaction_reader_bytes(opts, 2, 2, 3, s3) == 2 * 2 * 3 * (8 * MiB + 3 * MiB)


@pytest.mark.parametrize("client", ["native", "s3fs"])
def test_to_batches_on_s3_returns_what_a_local_table_returns(
        s3_warehouse: tuple[str, dict[str, Any]], proxy: CountingProxy, tmp_path: Path, client: str) -> None:
    opts = _options(s3_warehouse, proxy, client)
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    rng = np.random.default_rng(3)
    tables = []
    for cat in (Catalog(s3_warehouse[0], **opts), Catalog(str(tmp_path / "wh"))):
        cat.create_database("db")
        tables.append(cat.create_table("db.t", schema, primary_keys=["id"],
                                       options={"bucket": "2", "read.parquet.buffer-size": "64 kb"}))
    for seed in range(2):
        ids = np.unique(rng.integers(0, 50_000, 20_000))
        rows = pa.table({"id": ids, "v": ids * (seed + 1), "s": [f"s{i % 97}" for i in ids]}, schema=schema)
        for t in tables:
            t.write_arrow(rows)
    s3_rows, local_rows = (pa.Table.from_batches(list(t.to_batches(batch_size=1000))).sort_by("id")
                           for t in tables)
    assert s3_rows.num_rows > 0 and s3_rows.equals(local_rows)

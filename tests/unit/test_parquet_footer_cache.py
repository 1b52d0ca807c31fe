"""The process-wide cache of parsed Parquet footers (`formats.parquet_footer_cache`).

Repeated reads of a table reuse the footers of its immutable data files; a read still opens every
file itself, so a new snapshot's files are read, a deleted file fails as before, a file rewritten
under the same path with another size is parsed again, and the cache stays within its bounds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import MissingDataFileError
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE, Footer, FooterCache, decision_nbytes
from lake_assets.formats.parquet_read import read_parquet


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    FOOTER_CACHE.clear()
    yield
    FOOTER_CACHE.clear()


def _rows(ids: np.ndarray, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "name": pa.array([f"{tag}-{i % 7}" for i in ids.tolist()], pa.string())})


def _dv_table(tmp_path: Path) -> object:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", _rows(np.arange(0), "x").schema, primary_keys=["id"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(np.arange(1000), "a"))
    t.write_arrow(_rows(np.arange(0, 1000, 3), "b"))
    t.compact()
    return t


def _expected(n: int, updated: range) -> dict[int, str]:
    out = {i: f"a-{i % 7}" for i in range(n)}
    out.update({i: f"b-{i % 7}" for i in updated})
    return out


def _by_id(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("name").to_pylist(), strict=True))


def test_repeated_reads_reuse_footers_and_a_new_snapshot_is_read(tmp_path: Path) -> None:
    t = _dv_table(tmp_path)
    first = t.to_arrow()  # type: ignore[attr-defined]
    cached = len(FOOTER_CACHE)
    assert cached > 0
    again = t.to_arrow()  # type: ignore[attr-defined]
    assert len(FOOTER_CACHE) == cached  # the same files: no footer parsed again
    assert _by_id(first) == _by_id(again) == _expected(1000, range(0, 1000, 3))
    # projections and filters read through the same footers
    assert sorted(t.to_arrow(columns=["name"], filter=[("id", "<", 10)]).column("name").to_pylist()) == sorted(  # type: ignore[attr-defined]
        _expected(10, range(0, 10, 3)).values())
    # a new snapshot: its new files are read (and cached), the result is the new one
    t.write_arrow(_rows(np.arange(1000, 1100), "c"))  # type: ignore[attr-defined]
    newer = _by_id(t.to_arrow())  # type: ignore[attr-defined]
    assert len(newer) == 1100 and newer[1050] == "c-0"
    assert len(FOOTER_CACHE) > cached


def test_a_deleted_data_file_is_not_served_from_the_cache(tmp_path: Path) -> None:
    t = _dv_table(tmp_path)
    t.to_arrow()  # type: ignore[attr-defined]
    split = t.plan()[0]  # type: ignore[attr-defined]
    path = t.store.data_file_path(split.partition, split.bucket, split.files[0])  # type: ignore[attr-defined]
    os.remove(path)
    with pytest.raises(MissingDataFileError):
        t.to_arrow()  # type: ignore[attr-defined]


def test_a_file_rewritten_under_the_same_path_is_parsed_again(tmp_path: Path) -> None:
    path = str(tmp_path / "f.parquet")
    pq.write_table(_rows(np.arange(100), "old"), path)
    with pa.OSFile(path, "rb") as src:
        assert read_parquet(src, None, use_threads=False, footer_key=path).num_rows == 100
    pq.write_table(_rows(np.arange(250), "new"), path)  # another size
    with pa.OSFile(path, "rb") as src:
        got = read_parquet(src, ["name"], use_threads=False, footer_key=path)
    assert got.num_rows == 250 and got.column("name")[0].as_py() == "new-0"


def _footer(rows: int) -> Footer:
    table = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64))})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    pf = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    return Footer(sink.getvalue().size, pf.metadata, pf.schema_arrow)


def test_the_cache_is_bounded_by_entries_and_bytes() -> None:
    cache = FooterCache(max_entries=2, max_bytes=1 << 20)
    for name in ("a", "b", "c"):
        cache.put(name, _footer(10))
    assert len(cache) == 2 and cache.get("a", _footer(10).file_size) is None  # least recently used out
    size = _footer(10).file_size
    assert cache.get("b", size) is not None and cache.get("c", size) is not None

    one = _footer(10)
    by_bytes = FooterCache(max_entries=100, max_bytes=one.nbytes * 2)
    for name in ("a", "b", "c"):
        by_bytes.put(name, _footer(10))
    assert len(by_bytes) == 2 and by_bytes.nbytes <= one.nbytes * 2

    too_big = FooterCache(max_entries=100, max_bytes=one.nbytes - 1)
    too_big.put("a", one)
    assert len(too_big) == 0 and too_big.nbytes == 0


def test_a_footer_of_another_size_is_dropped() -> None:
    cache = FooterCache(max_entries=10, max_bytes=1 << 20)
    footer = _footer(10)
    cache.put("a", footer)
    assert cache.get("a", footer.file_size + 1) is None
    assert len(cache) == 0 and cache.nbytes == 0


def test_dictionary_decisions_count_against_the_byte_bound() -> None:
    one = _footer(10)
    decision = decision_nbytes(("id",), [])
    cache = FooterCache(max_entries=100, max_bytes=one.nbytes + 3 * decision)
    cache.put("a", one)
    assert cache.nbytes == one.metadata.serialized_size
    assert cache.decide("a", one, ("id",), []) == []
    assert cache.decide("a", one, ("id",), ["racing"]) == []  # decided once: counted once
    assert cache.nbytes == one.nbytes == one.metadata.serialized_size + decision
    # an entry grown past the whole bound by its decisions is dropped, as `put` refuses one
    for k in range(3):
        cache.decide("a", one, (f"c{k}",), [])
    assert len(cache) == 0 and cache.nbytes == 0

    # decisions push older entries out of the bound
    first, second = _footer(10), _footer(10)
    lru = FooterCache(max_entries=100, max_bytes=first.nbytes + second.nbytes + decision)
    lru.put("first", first)
    lru.put("second", second)
    lru.decide("second", second, ("id",), [])
    assert lru.nbytes == first.nbytes + second.nbytes
    lru.decide("second", second, ("x",), [])
    assert lru.get("first", first.file_size) is None and lru.get("second", second.file_size) is second
    assert lru.nbytes == second.nbytes <= lru.max_bytes


def test_projections_of_a_read_grow_the_entry_within_the_bound(tmp_path: Path) -> None:
    path = str(tmp_path / "f.parquet")
    pq.write_table(_rows(np.arange(100), "x"), path)
    for columns in (None, ["id"], ["name"], ["id", "name"]):
        with pa.OSFile(path, "rb") as src:
            read_parquet(src, columns, use_threads=False, footer_key=path)
    footer = FOOTER_CACHE.get(path, os.path.getsize(path))
    assert footer is not None and len(footer.dictionary_columns) == 4
    assert FOOTER_CACHE.nbytes == footer.nbytes > footer.metadata.serialized_size + 4 * decision_nbytes(None, [])

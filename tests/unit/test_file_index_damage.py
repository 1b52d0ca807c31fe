"""Damaged ``<file>.index`` files (docs/format.md §7.6): never read past.

An append table whose file indexes are written next to the data file (``<data file>.index``,
beyond ``file-index.in-manifest-threshold``): bloom filter, bitmap (versions 1 and 2), bsi and
range bitmap. Each one cut short, garbled or given a wrong size or row count makes a read that
prunes by it raise `CorruptMetadataError` naming the ``.index`` file, as Java 0.9's reader fails
(``FileIndexSkipper``; `tests/differential/test_file_index_damage_java.py` shows it); a missing one
is a `MissingDataFileError`; a bitmap naming a row past the data file's end, or counting other rows
than the file holds, is damage too. Reads that do not consult the index are unaffected.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog, CorruptMetadataError
from lake_assets.errors import MissingDataFileError
from lake_assets.formats.bitmap_index import BitmapIndex
from lake_assets.formats.file_index import read_container
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import Predicate
from lake_assets.spec.data_types import IntType
from tests.reliability.test_trust_stored_numbers import _craft, _fresh

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int32()), ("b2", pa.int32()), ("c", pa.int32()), ("d", pa.int64())])
OPTIONS = {"bucket": "-1", "file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.items": "20",
           "file-index.bitmap.columns": "b,b2", "file-index.bitmap.b2.version": "2", "file-index.bsi.columns": "c",
           "file-index.range-bitmap.columns": "d", "file-index.in-manifest-threshold": "1 b"}
# one filter per index: each consults its column's index only
FILTERS = {"bloom-filter": [("a", "=", 5)], "bitmap": [("b", "=", 5)], "bitmap-v2": [("b2", "=", 5)],
           "bsi": [("c", "<", 3)], "range-bitmap": [("d", ">", 10)]}
COLUMNS = {"bloom-filter": ("a", "bloom-filter"), "bitmap": ("b", "bitmap"), "bitmap-v2": ("b2", "bitmap"),
           "bsi": ("c", "bsi"), "range-bitmap": ("d", "range-bitmap")}
ROWS = 12


def _table(tmp: Path):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, options=OPTIONS)
    t.write_arrow(pa.table({"a": range(ROWS), "b": pa.array(range(ROWS), pa.int32()),
                            "b2": pa.array(range(ROWS), pa.int32()), "c": pa.array(range(ROWS), pa.int32()),
                            "d": range(ROWS)}, schema=SCHEMA))
    return t


def _index_file(t) -> Path:  # type: ignore[no-untyped-def]
    (e,) = t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
    assert e.file.embedded_file_index is None and len(e.file.extra_files) == 1
    return Path(t.store.written_file_paths(e.partition, e.bucket, e.file)[1])


def _at(data: bytes, kind: str) -> int:
    """Where the payload of ``kind``'s index starts in the container."""
    column, index_type = COLUMNS[kind]
    return data.index(read_container(data)[column][index_type])  # type: ignore[arg-type]


def _put(data: bytes, at: int, value: int, size: int = 4) -> bytes:
    return data[:at] + value.to_bytes(size, "big", signed=True) + data[at + size:]


def _first_bitmap_entry(data: bytes) -> tuple[int, int]:
    """(the value of column b's first bitmap entry, where its offset is stored)."""
    index = BitmapIndex.parse(read_container(data)["b"]["bitmap"], IntType())  # type: ignore[arg-type]
    return int(index.keys[0].as_py()), _at(data, "bitmap") + 10 + 4


# name -> (damage, the index whose filter meets it, what the error says)
CASES: dict[str, tuple[Callable[[bytes], bytes], str, str]] = {
    "container cut in the header": (lambda d: d[:30], "bloom-filter", "truncated"),
    "container garbled magic": (lambda d: _put(d, 0, 1, 8), "bloom-filter", "not a Paimon file index"),
    "index length past the end": (lambda d: d[:len(d) - 3], "range-bitmap", "outside the file|truncated"),
    "bloom filter of 2**31 hash functions": (lambda d: _put(d, _at(d, "bloom-filter"), 2**31 - 1), "bloom-filter",
                                             "hash functions"),
    "bitmap of 2**31 values": (lambda d: _put(d, _at(d, "bitmap") + 5, 2**31 - 1), "bitmap", "bitmap"),
    "bitmap v2 of 2**31 values": (lambda d: _put(d, _at(d, "bitmap-v2") + 5, 2**31 - 1), "bitmap-v2", "bitmap"),
    "bsi slices garbled": (lambda d: _put(d, _at(d, "bsi") + 7, 0x7f, 1), "bsi", "bsi"),
    "range bitmap header garbled": (lambda d: _put(d, _at(d, "range-bitmap") + 1, 2**31 - 1), "range-bitmap",
                                    "range-bitmap"),
    # row counts that are not the data file's (never trusted to flip or allocate by)
    "bitmap row count 2**31 - 1": (lambda d: _put(d, _at(d, "bitmap") + 1, 2**31 - 1), "bitmap",
                                   f"counts 2147483647 rows; the data file has {ROWS}"),
    "bitmap row count short": (lambda d: _put(d, _at(d, "bitmap") + 1, 3), "bitmap",
                               f"counts 3 rows; the data file has {ROWS}"),
    "bitmap v2 row count": (lambda d: _put(d, _at(d, "bitmap-v2") + 1, 10**9), "bitmap-v2",
                            f"counts 1000000000 rows; the data file has {ROWS}"),
    "bsi row count": (lambda d: _put(d, _at(d, "bsi") + 1, 5), "bsi", f"counts 5 rows; the data file has {ROWS}"),
    "range bitmap row count": (lambda d: _put(d, _at(d, "range-bitmap") + 5, 99), "range-bitmap",
                               f"counts 99 rows; the data file has {ROWS}"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_index_file_fails_the_filtered_read_naming_it(tmp_path: Path, case: str) -> None:
    damage, kind, message = CASES[case]
    t = _table(tmp_path)
    path = _index_file(t)
    rows = t.to_arrow().sort_by("a")
    damaged = damage(path.read_bytes())
    path.write_bytes(damaged)
    _fresh()
    with pytest.raises(CorruptMetadataError, match=message) as caught:
        t.to_arrow(filter=FILTERS[kind])
    assert f"file index {path.name} of {path.name.removesuffix('.index')} is corrupt" in str(caught.value)
    assert t.to_arrow().sort_by("a").equals(rows)  # a read without a filter does not consult it
    assert path.read_bytes() == damaged


def test_bitmap_naming_a_row_past_the_file_is_corrupt(tmp_path: Path) -> None:
    """A single-row entry (offset ``-1 - row``) naming row 10**9 of a 12-row file."""
    t = _table(tmp_path)
    path = _index_file(t)
    data = path.read_bytes()
    value, offset_at = _first_bitmap_entry(data)
    assert t.to_arrow(filter=[("b", "=", value)]).column("a").to_pylist() == [value]
    path.write_bytes(_put(data, offset_at, -1 - 10**9))
    _fresh()
    with pytest.raises(CorruptMetadataError, match=f"names row 1000000000 of a file of {ROWS} rows"):
        t.to_arrow(filter=[("b", "=", value)])


def test_missing_index_file_fails_the_filtered_read(tmp_path: Path) -> None:
    """Java 0.9's reader opens the ``.index`` file and fails without it: so do we."""
    t = _table(tmp_path)
    path = _index_file(t)
    path.unlink()
    _fresh()
    with pytest.raises(MissingDataFileError, match=f"file index .*{path.name} of .* is missing"):
        t.to_arrow(filter=FILTERS["bloom-filter"])
    assert t.to_arrow().num_rows == ROWS


def test_two_index_files_for_one_data_file_are_corrupt(tmp_path: Path) -> None:
    """Java 0.9: "Found more than one index file for one data file"."""
    t = _table(tmp_path)
    path = _index_file(t)
    twin = path.with_name("other-" + path.name)
    twin.write_bytes(path.read_bytes())
    _craft(t, lambda f: dataclasses.replace(f, extra_files=(*f.extra_files, twin.name)))
    _fresh()
    with pytest.raises(CorruptMetadataError, match="lists more than one index file"):
        t.refresh().to_arrow(filter=FILTERS["bloom-filter"])


def test_intact_index_file_still_prunes(tmp_path: Path) -> None:
    """The checks keep a sound index working: every filter reads its rows, and the index rules the
    file out for values it does not hold (terms on two bitmaps intersected row by row)."""
    t = _table(tmp_path)
    _index_file(t)
    data = t.to_arrow()
    for kind, flt in FILTERS.items():
        column, op, value = flt[0]
        fn = {"=": pc.equal, "<": pc.less, ">": pc.greater}[op]
        assert t.to_arrow(filter=flt).num_rows == data.filter(fn(data.column(column), value)).num_rows, kind
    (entry,) = t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
    for flt, may_match in [([("b", "=", 99)], False), ([("b", "!=", 3), ("c", "=", 3)], False),
                           ([("b2", "in", [98, 99])], False), ([("d", ">", 11)], False), ([("b", "=", 3)], True)]:
        pred = Predicate.of(flt).bind(t.arrow_schema, "db.t")  # type: ignore[union-attr]
        assert index_may_match(t.store, entry, pred, t.schema) is may_match, flt

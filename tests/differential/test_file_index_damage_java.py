"""Damaged or missing ``<file>.index`` files against Paimon Java 0.9 (docs/format.md §7.6).

Java 0.9 writes an append table whose bloom-filter and bitmap (version 1) indexes go to
``<data file>.index`` files. Each index file is then cut short, garbled or given a wrong length, or
removed: Java 0.9's filtered read fails (``FileIndexSkipper`` opens and parses it), and so does
lake_assets', with `CorruptMetadataError` (`MissingDataFileError` for a missing file) naming the
index file; reads without a filter work on both. Java 0.9 has no bsi or range-bitmap index and
writes no bitmap version 2 (Paimon 1.x's: `tests/unit/test_file_index_damage.py` covers them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError
from lake_assets.errors import MissingDataFileError
from lake_assets.formats.file_index import read_container
from tests.java.oracle import JavaError, PaimonJava

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int32())])
OPTIONS = {"bucket": "-1", "file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.items": "50",
           "file-index.bitmap.columns": "b", "file-index.in-manifest-threshold": "1 b"}
FILTERS = {"bloom-filter": [("a", "=", 5)], "bitmap": [("b", "=", 5)]}
MATCHES = {"bloom-filter": 1, "bitmap": 4}


def _at(data: bytes, column: str, index_type: str) -> int:
    return data.index(read_container(data)[column][index_type])  # type: ignore[arg-type]


def _put(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + value.to_bytes(4, "big", signed=True) + data[at + 4:]


def _start_field(data: bytes, column: str, index_type: str) -> int:
    """Where the container's header stores the start of ``column``'s ``index_type`` index."""
    key = len(column).to_bytes(2, "big") + column.encode()
    kind = len(index_type).to_bytes(2, "big") + index_type.encode()
    return data.index(kind, data.index(key)) + len(kind)


DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "cut in the bloom filter": (lambda d: d[:_at(d, "a", "bloom-filter") + 8], "bloom-filter"),
    "cut in the header": (lambda d: d[:30], "bitmap"),
    "garbled magic": (lambda d: b"\x00" * 8 + d[8:], "bloom-filter"),
    "bitmap entries past the end": (lambda d: _put(d, _at(d, "b", "bitmap") + 5, 2**31 - 1), "bitmap"),
}


def _java_table(java: PaimonJava, wh: str) -> Path:
    java.create_table(wh, "db.t", SCHEMA, options=OPTIONS)
    java.write(wh, "db.t", pa.table({"a": range(40), "b": pa.array([i % 10 for i in range(40)], pa.int32())},
                                    schema=SCHEMA))
    (index_file,) = Path(wh).rglob("*.index")
    return index_file


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_index_file_fails_javas_read_and_ours(java: PaimonJava, wh: str, lake: Catalog, case: str) -> None:
    damage, kind = DAMAGE[case]
    index_file = _java_table(java, wh)
    assert java.read(wh, "db.t", filter=FILTERS[kind]).num_rows == MATCHES[kind]  # sound: both read the rows
    assert lake.get_table("db.t").to_arrow(filter=FILTERS[kind]).num_rows == MATCHES[kind]
    index_file.write_bytes(damage(index_file.read_bytes()))
    with pytest.raises(JavaError):
        java.read(wh, "db.t", filter=FILTERS[kind])
    with pytest.raises(CorruptMetadataError, match=f"file index {index_file.name} of .* is corrupt"):
        lake.get_table("db.t").to_arrow(filter=FILTERS[kind])
    assert java.read(wh, "db.t").num_rows == 40
    assert lake.get_table("db.t").to_arrow().num_rows == 40


def test_missing_index_file_fails_javas_read_and_ours(java: PaimonJava, wh: str, lake: Catalog) -> None:
    index_file = _java_table(java, wh)
    index_file.unlink()
    with pytest.raises(JavaError) as caught:
        java.read(wh, "db.t", filter=FILTERS["bloom-filter"])
    assert caught.value.mentions("FileNotFoundException") or caught.value.mentions(index_file.name), caught.value
    with pytest.raises(MissingDataFileError, match=f"{index_file.name} of .* is missing"):
        lake.get_table("db.t").to_arrow(filter=FILTERS["bloom-filter"])
    assert java.read(wh, "db.t").num_rows == 40
    assert lake.get_table("db.t").to_arrow().num_rows == 40


def test_bitmap_length_past_the_end_java_reads_past_we_refuse(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """The container says the bitmap runs 1 MiB past the file's end. Java 0.9's bitmap reader
    seeks to the index's start and never uses its length, so it reads on; lake_assets checks
    every index's bounds when it parses the container (as for an embedded index, where Java's
    scan does the same and lake_assets fails alike) and refuses the damaged file: a read that
    stops where Java would read on, never one that reads past damage."""
    index_file = _java_table(java, wh)
    data = index_file.read_bytes()
    index_file.write_bytes(_put(data, _start_field(data, "b", "bitmap") + 4, 2**20))
    assert java.read(wh, "db.t", filter=FILTERS["bitmap"]).num_rows == MATCHES["bitmap"]
    with pytest.raises(CorruptMetadataError, match=f"file index {index_file.name} of .* is corrupt: .*outside"):
        lake.get_table("db.t").to_arrow(filter=FILTERS["bitmap"])

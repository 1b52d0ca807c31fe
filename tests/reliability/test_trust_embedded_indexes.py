"""Trust boundary: file indexes embedded in manifest entries (issue 14, session 18).

An append table's small file indexes (bloom filter, bitmap, bsi, range bitmap: every kind Paimon
writes) sit in the manifest entry's ``_EMBEDDED_FILE_INDEX``. Damaged as a buggy writer or a torn
manifest would leave them - cut, magic or version changed, offsets and lengths outside, counts of
2**31 - a filtered read raises `CorruptMetadataError` naming the data file, as Paimon Java 0.9's
scan fails on them (``AppendOnlyFileStoreScan.testFileIndex``), and never another exception or an
allocation beyond a few megabytes (a bloom filter claiming 2**31 hash functions asked for 8 GiB
per literal). Reads without a filter, health, compaction, orphan removal and expiry do not use
the index. A canary beside the table is never touched. (A damaged ``<file>.index`` next to the
data file fails the filtered read alike: `test_trust_stored_numbers`, `tests/unit/test_file_index_damage.py`.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import tracemalloc
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, LakeError
from lake_assets.formats.file_index import read_container
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import Predicate
from tests.reliability.test_trust_stored_numbers import _craft, _fresh

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int32()), ("d", pa.int64())])
OPTIONS = {"bucket": "-1", "file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.items": "20",
           "file-index.bitmap.columns": "b", "file-index.bsi.columns": "c", "file-index.range-bitmap.columns": "d",
           "file-index.in-manifest-threshold": "64 kb"}
FILTERS = {"a": [("a", "=", 5)], "b": [("b", "=", "s1")], "c": [("c", "<", 3)], "d": [("d", ">", 10)]}


def _table(tmp: Path):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, options=OPTIONS)
    t.write_arrow(pa.table({"a": range(12), "b": [f"s{i % 3}" for i in range(12)],
                            "c": pa.array(range(12), pa.int32()), "d": range(12)}, schema=SCHEMA))
    t.write_arrow(pa.table({"a": [100], "b": ["z"], "c": pa.array([100], pa.int32()), "d": [100]}, schema=SCHEMA))
    return t


def _embedded(t) -> tuple[str, bytes]:  # type: ignore[no-untyped-def]
    e = min(t.store.file_store_scan().live_entries(t.snapshot_manager.latest()), key=lambda e: -e.file.row_count)
    assert e.file.embedded_file_index is not None and not e.file.extra_files
    return e.file.file_name, e.file.embedded_file_index


def _at(data: bytes, column: str, index_type: str) -> int:
    """Where the payload of ``column``'s index starts in the embedded bytes."""
    return data.index(read_container(data)[column][index_type])  # type: ignore[arg-type]


def _put(data: bytes, at: int, value: int, size: int = 4) -> bytes:
    return data[:at] + value.to_bytes(size, "big", signed=value < 0) + data[at + size:]


# name -> (damage, the column whose filter meets it, what the error says)
CASES: dict[str, tuple[Callable[[bytes], bytes], str, str]] = {
    "cut in the header": (lambda d: d[:30], "a", "header is truncated|truncated"),
    "cut in a payload": (lambda d: d[:_at(d, "d", "range-bitmap") + 9], "a", "outside the file|truncated"),
    "wrong magic": (lambda d: _put(d, 0, 1, 8), "a", "not a Paimon file index"),
    "wrong version": (lambda d: _put(d, 8, 7), "a", "file index version 7"),
    "negative offset": (lambda d: _put(d, 22 + 2 + 1 + 4 + 2 + len(b"bloom-filter"), -5), "a", "outside the file"),
    "length past the end": (lambda d: _put(d, 22 + 2 + 1 + 4 + 2 + len(b"bloom-filter") + 4, 2**31 - 1), "a",
                            "outside the file"),
    "bloom filter of 2**31 hash functions": (lambda d: _put(d, _at(d, "a", "bloom-filter"), 2**31 - 1), "a",
                                             "2147483647 hash functions"),
    "bloom filter of no hash function": (lambda d: _put(d, _at(d, "a", "bloom-filter"), 0), "a", "0 hash functions"),
    "bitmap of 2**31 values": (lambda d: _put(d, _at(d, "b", "bitmap") + 5, 2**31 - 1), "b", "bitmap"),
    "bsi payload cut": (lambda d: _put(d, _at(d, "c", "bsi") + 7, 0x7f, 1), "c", "bsi"),
    "range bitmap cut short": (lambda d: _put(d, _at(d, "d", "range-bitmap") + 1, 2**31 - 1), "d", "range-bitmap"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_embedded_index_is_corrupt_metadata_naming_the_file(tmp_path: Path, case: str) -> None:
    damage, column, message = CASES[case]
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    t = _table(tmp_path)
    name, data = _embedded(t)
    rows = t.to_arrow().sort_by("a")
    damaged = damage(data)
    _craft(t, lambda f: dataclasses.replace(f, embedded_file_index=damaged) if f.file_name == name else f)
    _fresh()
    with pytest.raises(CorruptMetadataError) as caught:
        t.to_arrow(filter=FILTERS[column])
    text = str(caught.value)
    assert f"embedded in the manifest entry of {name}" in text and re.search(message, text), text
    # what does not consult the index works, and leaves the table as it was
    assert t.to_arrow().sort_by("a").equals(rows)
    t.health()
    t.compact(full=True)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    t.expire_snapshots(retain_min=1, retain_max=1)
    _fresh()
    assert t.refresh().to_arrow().sort_by("a").equals(rows)
    assert canary.read_bytes() == b"precious"


def test_every_cut_and_hostile_int_is_a_lake_error_within_bounded_memory(tmp_path: Path) -> None:
    """Each prefix, and each 4-byte window set to 2**31 - 1 or -1, under every filter: a
    `LakeError` or an answer, and no allocation above 16 MB (numpy's are traced too)."""
    t = _table(tmp_path)
    name, data = _embedded(t)
    [entry] = [e for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
               if e.file.file_name == name]
    preds = [Predicate.of(f).bind(t.arrow_schema, "db.t") for f in FILTERS.values()]  # type: ignore[union-attr]
    # every field of the header and the first fields of each payload; prefixes every few bytes
    starts = sorted({_at(data, c, k) for c, kinds in read_container(data).items() for k in kinds})
    windows = [*range(starts[0]), *(at for s in starts for at in range(s, s + 24))]
    variants = [data[:i] for i in range(0, len(data), 5)]
    variants += [_put(data, at, v) for at in windows if at + 4 <= len(data) for v in (2**31 - 1, -1)]
    logging.disable(logging.WARNING)
    tracemalloc.start()
    try:
        for damaged in variants:
            file = dataclasses.replace(entry.file, embedded_file_index=damaged)
            for pred in preds:
                with contextlib.suppress(LakeError):  # an answer or a lake error: nothing else
                    index_may_match(t.store, dataclasses.replace(entry, file=file), pred, t.schema)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        logging.disable(logging.NOTSET)
    assert peak < 16 * 2**20, peak

"""Trust boundaries for the numbers and names manifests store (sessions 13-16 features).

One stored value of a real table is damaged - a data file's size, row count, level, schema id,
``_FIRST_ROW_ID`` or ``_DELETE_ROW_COUNT``; an index file's size, row count or a deletion vector's
data file, offset, length or cardinality - in a snapshot crafted as another process would commit
it. Every operation that reads it (read, filtered read, stream, health, compact, orphan removal,
expiry) either works as before or raises `CorruptMetadataError` naming the file and the field,
never a raw ValueError/MemoryError; a canary next to the table is never touched.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, LakeError
from lake_assets.errors import InvalidDataError
from lake_assets.formats.file_index import read_container, write_container
from lake_assets.formats.manifest_codec import MAX_LEVEL, encode_index_manifest
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.store import manifest_io

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
KINDS = {
    "dv": {"bucket": "-1", "deletion-vectors.enabled": "true"},
    "file-index": {"bucket": "-1", "file-index.bloom-filter.columns": "k"},
    "row-tracking": {"bucket": "-1", "row-tracking.enabled": "true", "data-evolution.enabled": "true"},
}


def _fresh() -> None:
    """Forget what this process decoded, as another process would start."""
    manifest_io._cache_slot.cache_clear()
    INDEX_FILE_CACHE.clear()


def _table(tmp: Path, kind: str):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, options=KINDS[kind])
    t.write_arrow(pa.table({"k": list(range(10)), "v": ["a"] * 10}, schema=SCHEMA))
    if kind == "dv":
        t.delete_where([("k", "<", 3)])
    else:
        t.write_arrow(pa.table({"k": [10, 11], "v": ["b"] * 2}, schema=SCHEMA))
    return t.refresh()


def _craft(t, files: Callable[[DataFileMeta], DataFileMeta] | None = None,  # type: ignore[no-untyped-def]
           index: Callable[[IndexManifestEntry], IndexManifestEntry] | None = None) -> None:
    """Commit a snapshot holding the live files and index files, each passed through the damage."""
    mio = t.store.manifest_io()
    latest = t.snapshot_manager.latest()
    live = t.store.file_store_scan().live_entries(latest)
    if files is not None:
        live = [dataclasses.replace(e, file=files(e.file)) for e in live]
    base, base_size = mio.write_manifest_list(mio.write_manifests(live))
    delta, delta_size = mio.write_manifest_list([])
    index_manifest = latest.index_manifest
    if index is not None:
        index_manifest = "index-manifest-crafted-0"
        entries = [index(e) for e in t.store.index_entries(latest.index_manifest)]
        Path(t.paths.manifest_file(index_manifest)).write_bytes(encode_index_manifest(entries))
    snap = Snapshot(
        id=latest.id + 1, schema_id=t.schema.id, base_manifest_list=base, base_manifest_list_size=base_size,
        delta_manifest_list=delta, delta_manifest_list_size=delta_size, commit_user="crafted",
        commit_identifier=latest.id + 1, commit_kind=CommitKind.COMPACT, time_millis=int(time.time() * 1000),
        total_record_count=latest.total_record_count, delta_record_count=0, index_manifest=index_manifest,
    )
    assert t.snapshot_manager.try_commit(snap)
    t.snapshot_manager.write_latest_hint(snap.id)


def _file(**changes: object) -> Callable[[DataFileMeta], DataFileMeta]:
    return lambda f: dataclasses.replace(f, **changes)


def _dv_range(**changes: object) -> Callable[[IndexManifestEntry], IndexManifestEntry]:
    return lambda e: dataclasses.replace(e, dv_ranges=tuple(r._replace(**changes) for r in e.dv_ranges or ()))


def _stream(t) -> None:  # type: ignore[no-untyped-def]
    enumerator = t.stream(mode="earliest-full")
    reader = t.change_reader(stream=enumerator)
    for batch in enumerator.poll():
        for split in batch.splits:
            reader.read(split)


OPERATIONS: dict[str, Callable[..., object]] = {
    "read": lambda t: t.to_arrow(),
    "filtered read": lambda t: t.to_arrow(filter=[("k", "=", 5)]),
    "stream": _stream,
    "health": lambda t: t.health(),
    "compact": lambda t: t.compact(full=True),
    "remove orphans": lambda t: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True),
    "expire": lambda t: t.expire_snapshots(retain_min=1, retain_max=1),
}

# (table kind, damage to data files, damage to index files, what the error says)
CASES = {
    "negative file size": ("file-index", _file(file_size=-1), None, "_FILE_SIZE is -1"),
    "negative row count": ("file-index", _file(row_count=-1), None, "_ROW_COUNT is -1"),
    "negative level": ("file-index", _file(level=-3), None, "_LEVEL is -3"),
    # a level of 2**30 made health build 2**30 sorted runs (gigabytes) before this check
    "huge level": ("file-index", _file(level=2**30), None, f"_LEVEL is {2**30} \\(must be from 0 to {MAX_LEVEL}\\)"),
    "negative schema id": ("file-index", _file(schema_id=-1), None, "_SCHEMA_ID is -1"),
    "negative first row id": ("row-tracking", _file(first_row_id=-5), None, "_FIRST_ROW_ID is -5"),
    "delete count past rows": ("file-index", _file(delete_row_count=2**40), None, "_DELETE_ROW_COUNT is"),
    "negative index file size": ("dv", None, lambda e: dataclasses.replace(e, file_size=-1), "_FILE_SIZE is -1"),
    "negative index row count": ("dv", None, lambda e: dataclasses.replace(e, row_count=-1), "_ROW_COUNT is -1"),
    "vector of a non-plain name": ("dv", None, _dv_range(data_file="../x"), "Unsafe file name '../x'"),
    "negative vector offset": ("dv", None, _dv_range(offset=-5), "offset is -5"),
    "negative vector cardinality": ("dv", None, _dv_range(cardinality=-3), "cardinality is -3"),
    "vector length past the file": ("dv", None, _dv_range(length=2**31 - 1), "lies outside the file"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_stored_number_is_a_clear_error_everywhere(tmp_path: Path, case: str) -> None:
    kind, files, index, message = CASES[case]
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    t = _table(tmp_path, kind)
    _craft(t, files, index)
    failed = {}
    for name, operation in OPERATIONS.items():
        _fresh()
        try:
            operation(t)
        except CorruptMetadataError as exc:
            failed[name] = str(exc)
        except LakeError as exc:  # e.g. a feature compaction refuses: never about the damage
            assert not any(word in str(exc) for word in ("_FILE_SIZE", "_LEVEL", "_ROW_COUNT")), (name, exc)
    assert canary.read_bytes() == b"precious"
    # a plain read meets the damage: its error names the file and the field
    assert "read" in failed, failed
    for name, text in failed.items():
        assert ("data-" in text or "index-" in text), (name, text)
    assert re.search(message, failed["read"]), failed["read"]
    # destructive maintenance stopped or left the damaged (latest) snapshot alone
    assert t.snapshot_manager.latest_id() == 3


def test_undamaged_table_reads_the_same_after_a_crafted_copy(tmp_path: Path) -> None:
    """The crafting itself changes nothing a reader sees: the checks refuse the damage, not the copy."""
    for kind in KINDS:
        t = _table(tmp_path / kind, kind)
        before = t.to_arrow().sort_by("k")
        _craft(t, _file(), (lambda e: e) if kind == "dv" else None)
        _fresh()
        assert t.to_arrow().sort_by("k").equals(before)
        t.health()


# ------------------------------------------------------------------------------ file indexes


def _cut_name(data: bytes) -> bytes:
    """The first column name's length cut to 1 byte: its 2-byte character ends the name half-way."""
    return data[:20] + b"\x00\x01" + data[22:]


def _offset_outside(data: bytes) -> bytes:
    """The first index's start moved past the file's end."""
    name_len = int.from_bytes(data[20:22], "big")
    type_at = 22 + name_len + 4
    type_len = int.from_bytes(data[type_at:type_at + 2], "big")
    start_at = type_at + 2 + type_len
    return data[:start_at] + (2**31 - 1).to_bytes(4, "big") + data[start_at + 4:]


@pytest.mark.parametrize("damage", [_cut_name, _offset_outside, lambda d: d[:30], lambda d: b"\x00" * 8 + d[8:]])
def test_damaged_file_index_is_refused_by_name_and_not_used(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:

    data = write_container({"é": {"bloom-filter": b"payload"}})
    assert read_container(data) == {"é": {"bloom-filter": b"payload"}}
    with pytest.raises(InvalidDataError, match="file index of data-x"):  # never IndexError / struct.error
        read_container(damage(data), "file index of data-x")
    # a table whose <file>.index is damaged so: a filtered read fails naming it, as Java 0.9's
    # reader does (FileIndexSkipper), and a read that does not use the index is untouched
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", "file-index.bloom-filter.columns": "k"})
    t.write_arrow(pa.table({"k": list(range(10)), "v": ["a"] * 10}, schema=SCHEMA))
    e = t.store.file_store_scan().live_entries(t.snapshot_manager.latest())[0]
    index_file = Path(t.store.written_file_paths(e.partition, e.bucket, e.file)[1])
    original = index_file.read_bytes()
    index_file.write_bytes(damage(original))
    _fresh()
    if damage(original) == original:  # a name of one character: cutting its length to 1 changes nothing
        assert t.to_arrow(filter=[("k", "=", 5)]).to_pylist() == [{"k": 5, "v": "a"}]
    else:
        with pytest.raises(CorruptMetadataError, match=f"file index {index_file.name} of .* is corrupt"):
            t.to_arrow(filter=[("k", "=", 5)])
    assert t.to_arrow().num_rows == 10
    assert index_file.read_bytes() == damage(original) and canary.read_bytes() == b"precious"


# ------------------------------------------------------------------------------ snapshot JSON


@pytest.mark.parametrize("key", ["nextRowId", "totalRecordCount", "baseManifestListSize", "watermark"])
@pytest.mark.parametrize("value", ["x", True, 1.5, [1]])
def test_snapshot_number_of_another_type_is_corrupt(tmp_path: Path, key: str, value: object) -> None:
    """A row-tracking commit compared a string nextRowId with an int (TypeError) before."""
    t = _table(tmp_path, "row-tracking")
    path = Path(t.paths.snapshot_file(2))
    d = json.loads(path.read_text())
    d[key] = value
    path.write_text(json.dumps(d))
    _fresh()
    for operation in (lambda: t.to_arrow(), lambda: t.write_arrow(pa.table({"k": [1], "v": ["c"]}, schema=SCHEMA)),
                      lambda: t.compact(full=True)):
        with pytest.raises(CorruptMetadataError, match=f"snapshot-2 .*{key} must be an integer"):
            operation()
    assert t.snapshot_manager.latest_id() == 2

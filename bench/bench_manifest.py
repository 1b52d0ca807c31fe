"""Manifest decode by writer schema: ours, Paimon Java 0.9's and pypaimon's (issue 16).

    .venv/bin/python bench/bench_manifest.py [--entries 20000] [--repeat 5]

The same ``--entries`` manifest entries (and as many manifest-list records) are written as Avro
containers (zstandard) under three writer schemas: ours; Paimon Java 0.9's (its ``avro.schema``
header, checked in as ``tests/data/java09_manifest_schemas.json``: other record names, no
``_VALUE_STATS_COLS`` .. ``_WRITE_COLS_SEQUENCES``, a 7-field manifest list); pypaimon 2.1's (the
headers of ``tests/data/paimon_vectors``: other record names, two extra manifest-list fields).
Each is decoded by ``decode_manifest_entries`` / ``decode_manifest_list`` (the resolution plan made
once per writer schema) and, as the reference, with fastavro's per-record resolution
(``resolve_each_record=True``), both to model objects. Times are CPU seconds of this process
(``time.process_time``), best of ``--repeat``; the two paths must decode equal objects.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_manifest.py` from a checkout

from lake_assets.formats import manifest_codec as codec  # noqa: E402
from lake_assets.formats.avro_container import strip_logical_types, write_container  # noqa: E402
from lake_assets.formats.manifest_schemas import AvroSchema, read_records  # noqa: E402
from lake_assets.spec.manifest import (  # noqa: E402
    DataFileMeta,
    FileKind,
    FileSource,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

DATA = REPO_ROOT / "tests" / "data"
PYPAIMON_TABLE = DATA / "paimon_vectors" / "02_pk_partitioned" / "warehouse" / "db.db"


def _entries(n: int) -> list[ManifestEntry]:
    """``n`` entries shaped like a partitioned primary-key table's (stats on one key column)."""
    stats = SimpleStats(b"\x00" * 16, b"\x00" * 8 + b"\x01" * 8, (0,))
    return [
        ManifestEntry(
            FileKind.ADD if i % 5 else FileKind.DELETE,
            b"\x00\x00\x00\x01" + (i % 30).to_bytes(4, "little") + b"\x00" * 8,
            i % 4,
            4,
            DataFileMeta(
                f"data-4c1f2e9a-7d3b-4b8e-9a51-{i:012d}-0.parquet", 40_000 + i, 1000 + i, b"k" * 16,
                b"m" * 16, stats, SimpleStats.EMPTY, i, i + 999, 0, i % 5, (), 1_700_000_000_000 + i, 0,
                None, FileSource.APPEND if i % 3 else FileSource.COMPACT, None, None, None, None, None,
            ),
        )
        for i in range(n)
    ]


def _metas(n: int) -> list[ManifestFileMeta]:
    stats = SimpleStats(b"\x00" * 16, b"\x00" * 8 + b"\x01" * 8, (0,))
    return [ManifestFileMeta(f"manifest-{i:08d}-0", 2000 + i, 30, 3, stats, 0, 0, 3, 0, 5, None, None)
            for i in range(n)]


def _rewrite(ours: bytes, writer_schema: dict[str, Any]) -> bytes:
    """``ours`` written again under ``writer_schema`` (fields it lacks are left out, as that
    writer would)."""
    is_manifest = any(f["name"] == "_FILE" for f in writer_schema["fields"])
    raw = read_records(ours, "ours", codec._ENTRY if is_manifest else codec._LIST)
    parsed = fastavro.parse_schema(strip_logical_types(writer_schema))
    return write_container(parsed, json.dumps(writer_schema).encode(), raw, "zstandard", 1)


def _header_schema(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        schema = fastavro.reader(f).writer_schema
    assert isinstance(schema, dict)
    return schema


def _pypaimon_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    files = sorted((PYPAIMON_TABLE / "pk" / "manifest").iterdir())
    entry = next(f for f in files if f.name.startswith("manifest-") and "list" not in f.name)
    lst = next(f for f in files if f.name.startswith("manifest-list-"))
    return _header_schema(entry), _header_schema(lst)


def _reference(data: bytes, label: str, schema: AvroSchema, convert: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """Model objects of ``data`` read through fastavro's per-record resolution."""
    return codec._convert(read_records(data, label, schema, resolve_each_record=True), label, convert)


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        c0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - c0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    java = json.loads((DATA / "java09_manifest_schemas.json").read_text())
    py_entry, py_list = _pypaimon_schemas()
    ours_entries = codec.encode_manifest_entries(_entries(args.entries))
    ours_list = codec.encode_manifest_list(_metas(args.entries))
    files = {
        "manifest, ours": (ours_entries, codec.decode_manifest_entries, codec._entry_from),
        "manifest, Java 0.9": (_rewrite(ours_entries, java["manifest"]), codec.decode_manifest_entries,
                               codec._entry_from),
        "manifest, pypaimon": (_rewrite(ours_entries, py_entry), codec.decode_manifest_entries, codec._entry_from),
        "manifest list, ours": (ours_list, codec.decode_manifest_list, codec._meta_from),
        "manifest list, Java 0.9": (_rewrite(ours_list, java["manifest_list"]), codec.decode_manifest_list,
                                    codec._meta_from),
        "manifest list, pypaimon": (_rewrite(ours_list, py_list), codec.decode_manifest_list, codec._meta_from),
    }
    print(f"{args.entries:,} records per file, best of {args.repeat}; load average {os.getloadavg()}")
    print("| file (writer schema) | plan: CPU s | per-record resolution: CPU s | resolution / plan |")
    print("|---|---:|---:|---:|")
    for label, (data, decode, convert) in files.items():
        schema = codec._ENTRY if decode is codec.decode_manifest_entries else codec._LIST
        fast_s, fast = _best(functools.partial(decode, data, label), args.repeat)
        ref_s, ref = _best(functools.partial(_reference, data, label, schema, convert), args.repeat)
        if fast != ref:
            raise SystemExit(f"WRONG RESULT: {label}: the plan and resolution decode different objects")
        print(f"| {label} | {fast_s:.3f} | {ref_s:.3f} | {ref_s / fast_s:.2f}x |", flush=True)
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()

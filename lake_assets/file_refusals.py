"""Refusals that follow from the files a snapshot lists (see `lake_assets.table_support`):
`entry_refusals` for its manifest entries (data file formats by extension, as Paimon readers choose
the format, negative buckets other than ``bucket-postpone``, row-tracking and data-evolution
fields, external paths) and `index_refusals` for its index manifest (deletion vectors, hash
indexes, other types). Pure."""

from __future__ import annotations

from collections.abc import Iterable

from lake_assets.formats.file_format import format_of_file
from lake_assets.option_classification import is_true
from lake_assets.refusal import DATA, Op, Refusal
from lake_assets.refusal_actions import USE_PAIMON
from lake_assets.spec.manifest import IndexManifestEntry, ManifestEntry
from lake_assets.spec.schema import TableSchema

POSTPONE_BUCKET = -2
# Data file formats read, written, compacted and maintained (lake_assets.formats.file_format).
DATA_FILE_FORMATS = frozenset({"parquet", "orc", "avro"})


def data_file_format(file_name: str) -> str:
    """The format Paimon readers pick for a data file: its last extension, or the one before a
    compression suffix (docs/format.md §1)."""
    return format_of_file(file_name)


_COMMON_SUFFIXES = tuple(f".{f}" for f in sorted(DATA_FILE_FORMATS))


def entry_refusals(entries: Iterable[ManifestEntry], *, row_tracking: bool = False) -> list[Refusal]:
    """Refusals for what manifest entries show (one per kind, naming the first file). Pure.

    ``row_tracking``: the table is a row-tracking table, whose compaction keeps row ids and checks
    each file's ``_WRITE_COLS`` itself (ops/compact/row_tracking_rewrite.py, data_evolution_compact.py)."""
    found: dict[str, Refusal] = {}

    def add(kind: str, prop: str, why: str, ops: frozenset[Op], action: str) -> None:
        if kind not in found:
            found[kind] = Refusal(prop, why, ops, action)

    for e in entries:
        f = e.file
        # the common case first: this runs over every entry a read plans
        if (e.bucket >= 0 and f.file_name.endswith(_COMMON_SUFFIXES) and f.write_cols is None
                and f.first_row_id is None and not f.external_path):
            continue
        fmt = data_file_format(f.file_name)
        if fmt not in DATA_FILE_FORMATS:
            shown = repr(fmt) if fmt else "(none)"  # a name that ends in no format
            add(f"format:{fmt}", f"data file format {shown} (file {f.file_name})",
                f"only {', '.join(sorted(DATA_FILE_FORMATS))} data files are implemented", DATA,
                f"read and write the table with the Paimon (Java or pypaimon) that wrote {fmt} files" if fmt else
                "Paimon's readers cannot tell this file's format either (its name ends in no format): find out "
                "what wrote it into the table")
        # bucket-postpone files: every operation handles them (batch scans skip them, change reads
        # follow Paimon's stream scans, ops/stream.py; compaction moves them, ops/postpone.py)
        if e.bucket < 0 and e.bucket != POSTPONE_BUCKET:
            add("bucket", f"bucket {e.bucket} (file {f.file_name})", "negative buckets are not implemented", DATA,
                f"{USE_PAIMON} (the release that wrote this bucket)")
        if f.write_cols is not None and not row_tracking:
            # batch reads merge them by row-id range (ops/data_evolution_read.py); a compaction
            # would drop the _ROW_ID / _SEQUENCE_NUMBER columns such a file may hold
            add("write_cols", f"files of a column subset (_WRITE_COLS, e.g. {f.file_name})",
                "compacting them is not implemented", frozenset({Op.COMPACT}),
                "compact the table with the Paimon that wrote these files (its compact procedure); reads and "
                "writes here are not refused")
        if f.first_row_id is not None and not row_tracking:
            add("row_id", f"row tracking (_FIRST_ROW_ID, e.g. {f.file_name})",
                "compaction would not keep row ids", frozenset({Op.COMPACT}),
                "compact the table with the Paimon that wrote these files (its compact procedure); reads and "
                "writes here are not refused")
        if f.external_path:
            add("external", f"external data file paths (_EXTERNAL_PATH, e.g. {f.external_path})",
                "lake_assets never deletes outside the table directory", frozenset({Op.EXPIRE}),
                "expire the table's snapshots with Paimon Java 1.1+, the release that writes external paths "
                "(its expire_snapshots procedure); reads and writes here are not refused")
    return list(found.values())


def index_refusals(entries: Iterable[IndexManifestEntry], schema: TableSchema) -> list[Refusal]:
    """Refusals for the index files a snapshot carries. Pure."""
    found: dict[str, Refusal] = {}
    dynamic = bool(schema.primary_keys) and schema.core_options.bucket == -1
    for e in entries:
        t = e.index_type
        if t in found:
            continue
        if t == "HASH":
            # the dynamic-bucket key index: writers keep it (ops/dynamic_bucket.py), reads and
            # compaction leave keys in their buckets
            if not dynamic:
                found[t] = Refusal("hash index files (HASH) in a table without dynamic bucket mode",
                                   "writes would have to maintain a hash index this bucket mode does not have",
                                   frozenset({Op.WRITE, Op.COMPACT}),
                                   "write and compact the table with the Paimon that wrote the index; reads here "
                                   "are not refused")
        elif t == "DELETION_VECTORS":
            # batch reads apply them (ops/deletion_vectors.py)
            if not is_true(schema.options.get("deletion-vectors.enabled")):
                # Java ignores them then; a compaction of ours would carry stale vectors forward
                found[t] = Refusal("deletion vector index files (DELETION_VECTORS) without "
                                   "deletion-vectors.enabled", "compaction would keep vectors of rows it rewrites",
                                   frozenset({Op.WRITE, Op.COMPACT}),
                                   "write and compact the table with Paimon Java, which ignores the vectors while "
                                   "deletion-vectors.enabled is unset")
        elif is_true(schema.options.get("row-tracking.enabled")):
            # newer Paimons' global indexes (btree, bitmap, full-text, vector) of row-tracking tables,
            # e.g. pypaimon's create_global_index: entries of the index manifest by row-id range
            found[t] = Refusal(f"global index type {t!r} (a newer Paimon's index of a row-tracking table)",
                               "global indexes are not implemented", DATA,
                               "drop the index (pypaimon's drop_global_index, Paimon's drop_global_index "
                               "procedure) to use the table here, or use Paimon Java HEAD or pypaimon for it")
        else:
            found[t] = Refusal(f"index type {t!r}", "this index type is not implemented", DATA,
                               f"{USE_PAIMON} (the release that wrote this index)")
    return list(found.values())


__all__ = ["DATA_FILE_FORMATS", "POSTPONE_BUCKET", "data_file_format", "entry_refusals", "index_refusals"]

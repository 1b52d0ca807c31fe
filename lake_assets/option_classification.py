"""What an option key a table carries means to lake_assets' operations: whether lake_assets knows it
(implements or deliberately refuses it), and, for the keys it does not know, whether they provably
leave reads unchanged (`READ_HARMLESS_KEYS` / `READ_HARMLESS_PREFIXES`) or only steer writers
(`WRITER_ONLY_PREFIXES`). `lake_assets.table_support` turns these classes into refusals."""

from __future__ import annotations

from lake_assets.options import KNOWN_OPTIONS, LAKE_ASSETS_OPTIONS, rule_for

# Options a newer Paimon may carry that never change which rows a read returns: they steer
# writers, compaction, retention, lookups, catalogs or engines. Unknown keys outside these lists
# refuse reads too (see the module docstring). (``force-lookup`` does change a read's merge, and
# reads honour it: lsm/lookup_merge.py; writers, which would ignore it, refuse it as unknown.)
READ_HARMLESS_KEYS: frozenset[str] = frozenset({
    "owner", "comment", "bucket-append-ordered", "lookup-compact", "lookup-wait", "sequence.snapshot-ordering",
    "metadata.stats-dense-store", "metadata.stats-keep-first-n-columns", "target-file-row-num",
    "record-level.expire-time", "write-manifest-cache", "force-lookup", "async-file-write",
})
READ_HARMLESS_PREFIXES: tuple[str, ...] = (
    "sink.", "lookup.", "dynamic-bucket.", "postpone.", "tag.", "partition.expiration", "partition.timestamp",
    "partition.mark-done", "snapshot.", "consumer.", "compaction.", "changelog.", "manifest.", "commit.",
    "write-", "parquet.", "orc.", "avro.", "file-index.", "full-compaction.", "num-sorted-run.", "local-merge",
    "cross-partition-upsert.", "metastore.", "client-pool", "cache-", "spill-", "sort-", "page-",
    "read.batch-size", "source.", "continuous.",
)
# Options that only steer how writers place new rows (bucket assignment, sink parallelism, postpone
# staging): refused for writes, which would ignore them, but compaction, expiry and orphan removal
# never depend on them (compaction keeps every row in its bucket).
WRITER_ONLY_PREFIXES: tuple[str, ...] = ("dynamic-bucket.", "sink.", "postpone.")

# Start positions a table may store for its readers: Paimon readers honour them by default (a batch
# read of a table carrying scan.snapshot-id reads that snapshot), lake_assets' reads do not.
SCAN_POSITION_KEYS = ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "scan.timestamp",
                      "scan.file-creation-time-millis", "scan.bounded.watermark", "scan.version",
                      "scan.creation-time-millis")
SCAN_MODES_READ_AS_LATEST = frozenset({"default", "latest-full", "full"})


def is_true(value: str | None) -> bool:
    """Whether an option value reads as ``true`` (as Paimon parses booleans: case-insensitive)."""
    return str(value).strip().lower() == "true"


def is_known_option(key: str) -> bool:
    """Whether lake_assets implements (or deliberately refuses) this option key."""
    return key in KNOWN_OPTIONS or key in LAKE_ASSETS_OPTIONS or rule_for(key) is not None


def is_read_harmless(key: str) -> bool:
    """Whether an option we do not implement provably leaves batch and streaming reads unchanged."""
    return key in READ_HARMLESS_KEYS or key.startswith(READ_HARMLESS_PREFIXES)


__all__ = [
    "READ_HARMLESS_KEYS",
    "READ_HARMLESS_PREFIXES",
    "SCAN_MODES_READ_AS_LATEST",
    "SCAN_POSITION_KEYS",
    "WRITER_ONLY_PREFIXES",
    "is_known_option",
    "is_read_harmless",
    "is_true",
]

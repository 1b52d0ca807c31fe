"""Registry rows of Paimon's ``RocksDBOptions`` (``rocksdb.*``): the configuration of the local
RocksDB state of Java's jobs, that is Flink's and Spark's cross-partition upsert key index
(``GlobalIndexAssigner``) and lookup joins' caches.

Paimon 0.9 to 1.4 declare them in ``paimon-core/.../lookup/RocksDBOptions.java`` (``lookup/rocksdb/``
since 1.1); HEAD removed RocksDB state (apache/paimon #8886) and with it these keys. A table created
by a Flink or Spark job tuning its cross-partition index carries them in its schema. They shape a
job's local, temporary state only, never the table's files or what a read returns: lake_assets'
cross-partition writers keep their key index themselves (`lake_assets.ops.key_index`, bounded by
``write-buffer-size``), so the keys are read-harmless and without effect here, accepted with any
value as Paimon accepts them (`lake_assets.option_rules_engines` merges them into ``ENGINE_RULES``).
"""

from __future__ import annotations

from lake_assets.option_types import OptionRule

_NOTE = ("Paimon Java job runtime setting with no effect on what lake_assets reads, writes or maintains "
         "(the local RocksDB state of Java's cross-partition key index and lookup caches; lake_assets' "
         "cross-partition writers keep their own key index, bounded by write-buffer-size); any value is "
         "accepted at create and ALTER, as Paimon does")

# key -> description (the value type Java parses), as RocksDBOptions declares them (0.9 to 1.4)
_KEYS: dict[str, str] = {
    "rocksdb.thread.num": "Background threads of RocksDB's flushes and compactions (int).",
    "rocksdb.files.open": "Files RocksDB keeps open (int).",
    "rocksdb.log.max-file-size": "Largest RocksDB info log file (memory size).",
    "rocksdb.log.file-num": "RocksDB info log files kept (int).",
    "rocksdb.log.dir": "Directory of RocksDB's info logs.",
    "rocksdb.log.level": "Level of RocksDB's info log.",
    "rocksdb.compression.type": "Compression of RocksDB's blocks.",
    "rocksdb.compaction.style": "RocksDB's compaction style (LEVEL, FIFO, UNIVERSAL).",
    "rocksdb.compaction.level.use-dynamic-size": "RocksDB's dynamic level sizes (boolean).",
    "rocksdb.compaction.level.target-file-size-base": "RocksDB's target file size at level 1 (memory size).",
    "rocksdb.compaction.level.max-size-level-base": "RocksDB's size of level 1 (memory size).",
    "rocksdb.writebuffer.size": "RocksDB's memtable size (memory size).",
    "rocksdb.writebuffer.count": "RocksDB's memtables (int).",
    "rocksdb.writebuffer.number-to-merge": "RocksDB's memtables merged before a flush (int).",
    "rocksdb.block.blocksize": "RocksDB's data block size (memory size).",
    "rocksdb.block.metadata-blocksize": "RocksDB's metadata block size (memory size).",
    "rocksdb.block.cache-size": "RocksDB's block cache (memory size).",
    "rocksdb.use-bloom-filter": "RocksDB's bloom filters (boolean).",
    "rocksdb.bloom-filter.bits-per-key": "Bits per key of RocksDB's bloom filters (double).",
    "rocksdb.bloom-filter.block-based-mode": "RocksDB's block-based bloom filters (boolean).",
}

ROCKSDB_RULES: dict[str, OptionRule] = {
    key: OptionRule(key, "string", None, f"{description} Paimon 0.9 to 1.4 (RocksDBOptions).", note=_NOTE)
    for key, description in _KEYS.items()
}

__all__ = ["ROCKSDB_RULES"]

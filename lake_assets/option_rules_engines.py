"""Registry rows of options that only steer another engine's runtime: Paimon's Flink and Spark
connectors (``FlinkConnectorOptions``, ``SparkConnectorOptions``) and the ``CoreOptions`` keys that
only Flink or Spark jobs, lookup joins and their caches read.

Tables that Flink or Spark created carry them in their schema (``sink.parallelism``,
``write.merge-schema``...). None of them changes what is in the table's files or what a read of
them returns (docs/format.md §13 cites the source of each), so a table carrying them is read,
written and maintained as if they were absent. Paimon accepts any key at create and ALTER and
parses a connector's option only when that connector runs (``SchemaValidation.validateTableSchema``
checks CoreOptions only), so these rows are free text: any value is accepted, as in Paimon.

A few keys do matter to us and are refused by name for the operations they affect
(`lake_assets.option_rules_refused`): a stored partition filter of Flink's reads. Partition mark-done,
which lake_assets' Spark writes implement, has its own rows (`lake_assets.option_rules_mark_done`).
`lake_assets.option_rules` merges the dicts into the registry.
"""

from __future__ import annotations

from lake_assets.option_rules_rocksdb import ROCKSDB_RULES
from lake_assets.option_types import OptionRule

_ANY_VALUE = "any value is accepted at create and ALTER, as Paimon does"


def _runtime(source: str, key: str, description: str, why: str, fallback_keys: tuple[str, ...] = ()) -> OptionRule:
    note = (f"{source} runtime setting with no effect on what lake_assets reads, writes or maintains "
            f"({why}); {_ANY_VALUE}")
    return OptionRule(key, "string", None, description, note=note, fallback_keys=fallback_keys)


def _flink(key: str, description: str, why: str = "Flink's job only",
           fallback_keys: tuple[str, ...] = ()) -> OptionRule:
    return _runtime("Flink connector", key, description, why, fallback_keys)


def _spark(key: str, description: str, why: str = "Spark's queries only") -> OptionRule:
    return _runtime("Spark connector", key, description, why)


def _job(key: str, description: str, why: str, fallback_keys: tuple[str, ...] = ()) -> OptionRule:
    """A CoreOptions key that only Paimon Java's jobs (Flink and Spark writers, sources, lookups) read."""
    return _runtime("Paimon Java job", key, description, why, fallback_keys)


def _rules(*rows: OptionRule) -> dict[str, OptionRule]:
    return {r.key: r for r in rows}


_PARALLELISM = "how many tasks run, not what they write"
_MEMORY = "memory or CPU of Flink's operators"
_WATERMARK = "watermarks of Flink's source"
_LOOKUP = "Flink's lookup joins"
_STREAM = "how Flink's streaming source plans and paces its reads"
_SPARK_STREAM = "how Spark's streaming source paces its micro-batches"
_LOOKUP_CACHE = "local caches of lookup joins and of Java's lookup compaction, not files of the table"
_MARK_DONE = ("Flink's streaming mark-done trigger; the _SUCCESS file it writes into a partition directory (the "
              "default partition.mark-done-action) is left by orphan removal, which lists Paimon's directories only, "
              "as Paimon's orphan clean does (docs/format.md §9.4)")
_MARK_DONE_TUNING = "read only by Flink's mark-done triggers (partition.idle-time-to-done, and end of input)"
_LOG = ("the log system (log.system, Paimon 1.3 and older), which lake_assets does not read; the table's files "
        "hold every row")

ENGINE_RULES: dict[str, OptionRule] = _rules(
    # ---- Flink connector (paimon-flink-common FlinkConnectorOptions.java, Paimon 0.9 to HEAD)
    _flink("sink.parallelism", "Parallelism of Flink's sink (int).", _PARALLELISM),
    _flink("scan.parallelism", "Parallelism of Flink's source (int).", _PARALLELISM),
    _flink("scan.infer-parallelism", "Whether Flink infers the source's parallelism (boolean).", _PARALLELISM),
    _flink("scan.infer-parallelism.max", "Largest inferred source parallelism (int).", _PARALLELISM),
    _flink("unaware-bucket.compaction.parallelism", "Parallelism of Flink's append compaction (int).",
           _PARALLELISM),
    _flink("unaware-bucket.no-shuffle", "Flink's append writers skip the shuffle before compaction "
           "(boolean, Paimon 2.x).", _PARALLELISM),
    _flink("compaction.bucket-distribution-strategy", "How Flink spreads buckets over compaction tasks "
           "(Paimon 2.x).", _PARALLELISM),
    _flink("changelog-producer.compaction-interval", "How often Flink's streaming writer compacts for "
           "the full-compaction changelog producer (duration).",
           "when Flink schedules its compactions; lake_assets compacts when asked"),
    _flink("scan.watermark.emit.strategy", "When Flink's source emits watermarks.", _WATERMARK),
    _flink("scan.watermark.alignment.group", "Watermark alignment group of Flink's source.", _WATERMARK),
    _flink("scan.watermark.idle-timeout", "Idle timeout of Flink's source watermarks (duration).", _WATERMARK),
    _flink("scan.watermark.alignment.max-drift", "Largest watermark drift before alignment (duration).",
           _WATERMARK),
    _flink("scan.watermark.alignment.update-interval", "How often watermark alignment is computed "
           "(duration).", _WATERMARK),
    _flink("scan.split-enumerator.batch-size", "Splits Flink's enumerator assigns per request (int).", _STREAM),
    _flink("scan.split-enumerator.mode", "How Flink's enumerator assigns splits (fair or preemptive).", _STREAM),
    _flink("scan.max-snapshot.count", "Snapshots one Flink streaming plan covers at most (int).", _STREAM),
    _flink("scan.bounded", "Whether Flink's source is bounded (boolean).", _STREAM),
    _flink("scan.dedicated-split-generation", "Flink plans splits in a dedicated operator (boolean).", _STREAM),
    _flink("scan.remove-normalize", "Flink's planner drops its ChangelogNormalize step (boolean).",
           "the changelog Flink's query emits, not the table", ("log.scan.remove-normalize",)),
    _flink("scan.push-down", "Whether Flink pushes filters into the source (boolean, Paimon 0.9).",
           "how Flink's planner runs a query, not its result"),
    _flink("read.shuffle-bucket-with-partition", "Flink's source shuffles splits by bucket and partition "
           "(boolean; its own key in Paimon 0.9 to 1.1: streaming-read.shuffle-bucket-with-partition).", _STREAM,
           ("streaming-read.shuffle-bucket-with-partition",)),
    _flink("source.checkpoint-align.enabled", "Flink's source aligns snapshots with checkpoints (boolean).",
           _STREAM),
    _flink("source.checkpoint-align.timeout", "Timeout of checkpoint alignment (duration).", _STREAM),
    _flink("source.operator-uid.suffix", "Suffix of the source operator's uid.", "Flink's job graph"),
    _flink("sink.operator-uid.suffix", "Suffix of the sink operators' uids.", "Flink's job graph"),
    _flink("sink.use-managed-memory-allocator", "Flink's writers use managed memory (boolean).", _MEMORY),
    _flink("sink.managed.writer-buffer-memory", "Managed memory of Flink's writers (memory size).", _MEMORY),
    _flink("sink.cross-partition.managed-memory", "Managed memory of Flink's cross-partition index "
           "(memory size).", _MEMORY),
    _flink("sink.writer-cpu", "CPU of Flink's writer operator (double).", _MEMORY),
    _flink("sink.writer-memory", "Heap of Flink's writer operator (memory size).", _MEMORY),
    _flink("sink.committer-cpu", "CPU of Flink's committer (double).", _MEMORY),
    _flink("sink.committer-memory", "Heap of Flink's committer (memory size).", _MEMORY),
    _flink("sink.committer-operator-chaining", "Whether Flink chains the committer (boolean).",
           "Flink's job graph"),
    _flink("sink.savepoint.auto-tag", "Flink tags the snapshot of each savepoint (boolean).",
           "tags that Flink's job creates; lake_assets keeps every tag"),
    _flink("sink.clustering.by-columns", "Columns Flink sorts a batch write of an append table by "
           "(Paimon 1.2 and older; then a fallback key of clustering.columns).",
           "the order of rows inside the files Flink writes, not which rows"),
    _flink("sink.clustering.strategy", "Curve Flink sorts by (Paimon 1.2 and older; then a fallback key of "
           "clustering.strategy).", "the order of rows inside the files Flink writes, not which rows"),
    _flink("sink.clustering.sample-factor", "Sample factor of Flink's clustering sort (int).",
           "the order of rows inside the files Flink writes, not which rows"),
    _flink("sink.clustering.sort-in-cluster", "Whether Flink also sorts within a cluster (boolean).",
           "the order of rows inside the files Flink writes, not which rows"),
    _flink("sink.coordinator-commit.enabled", "Flink commits from its JobManager (boolean, Paimon 2.x).",
           "where Flink's committer runs, not what it commits"),
    _flink("sink.writer-coordinator.enabled", "Flink plans data files in its JobManager (boolean).",
           "where Flink's writers look up files"),
    _flink("sink.writer-coordinator.cache-memory", "Cache memory of the writer coordinator (memory size).",
           _MEMORY),
    _flink("sink.writer-coordinator.cache-expire-after-access", "Cache expiry of the writer coordinator "
           "(duration).", _MEMORY),
    _flink("sink.writer-coordinator.cache-soft-values", "Soft cache values of the writer coordinator "
           "(boolean).", _MEMORY),
    _flink("sink.writer-coordinator.page-size", "Page size of the writer coordinator (memory size).", _MEMORY),
    _flink("sink.writer-coordinator.prefetch-manifests", "The writer coordinator prefetches manifests "
           "(boolean).", _MEMORY),
    _flink("sink.writer-refresh-detectors", "Option changes that make Flink's running writers refresh.",
           "Flink's running writers"),
    _flink("sink.key-only-deletes.enabled", "Flink's sink accepts deletes that carry only the key "
           "(boolean, Paimon 2.x).", "Flink's planner; the delete rows it writes merge as any delete"),
    _flink("filesystem.job-level-settings.enabled", "File system settings of the Flink job apply (boolean).",
           "Flink's file system clients"),
    _flink("end-input.watermark", "Watermark Flink's batch writer commits at end of input (long).",
           "the watermark of Flink's own commits"),
    _flink("precommit-compact", "Flink merges small changelog and append files before commit (boolean; "
           "its own key in Paimon 1.0: changelog.precommit-compact).", "how many files Flink writes, not which rows",
           ("changelog.precommit-compact",)),
    _flink("changelog.precommit-compact.thread-num", "Threads of Flink's pre-commit compaction (int).",
           _PARALLELISM),
    _flink("changelog.precommit-compact.buffer-size", "Buffer of Flink's pre-commit compaction (memory size).",
           _MEMORY),
    _flink("commit.custom-listeners", "Classes Flink's committer notifies after commits.",
           "listeners of Flink's committer"),
    _flink("lookup.async", "Asynchronous lookup joins (boolean).", _LOOKUP),
    _flink("lookup.async-thread-number", "Threads of asynchronous lookup joins (int).", _LOOKUP),
    _flink("lookup.bootstrap-parallelism", "Parallelism of a lookup join's bootstrap (int).", _LOOKUP),
    _flink("lookup.cache", "Cache mode of lookup joins (auto or full).", _LOOKUP),
    _flink("lookup.dynamic-partition.refresh-interval", "How often a lookup join refreshes its partitions "
           "(duration).", _LOOKUP),
    _flink("lookup.dynamic-partition.refresh.async", "Asynchronous partition refresh of lookup joins "
           "(boolean).", _LOOKUP),
    _flink("lookup.refresh.async", "Asynchronous refresh of lookup joins (boolean).", _LOOKUP),
    _flink("lookup.refresh.async.pending-snapshot-count", "Snapshots a lookup join may lag (int).", _LOOKUP),
    _flink("lookup.refresh.time-periods-blacklist", "Periods in which lookup joins do not refresh.", _LOOKUP),
    _flink("lookup.refresh.full-load-threshold", "Snapshots behind after which a lookup join reloads fully "
           "(int).", _LOOKUP),
    _flink("partition.idle-time-to-report-statistic", "Idle time after which Flink reports a partition's "
           "statistics to the metastore (duration; a CoreOptions key since 1.1).",
           "statistics in a metastore, not files of the table"),
    _flink("partition.idle-time-to-done", "Idle time after which Flink marks a partition done (duration).",
           _MARK_DONE),
    _flink("partition.time-interval", "Time span of a partition for Flink's mark-done (duration).",
           _MARK_DONE_TUNING),
    _flink("partition.mark-done-action.mode", "When Flink marks partitions done (process-time or watermark).",
           _MARK_DONE_TUNING),
    _flink("partition.mark-done.recover-from-state", "Flink recovers its mark-done state (boolean).",
           _MARK_DONE_TUNING),
    _flink("log.system", "Log system of the table (none or kafka; Paimon 1.3 and older).", _LOG),
    _flink("log.system.partitions", "Partitions of the log system's topic (int).", _LOG),
    _flink("log.system.replication", "Replication of the log system's topic (int).", _LOG),
    # ---- Spark connector (paimon-spark-common SparkConnectorOptions.java, Paimon 0.9 to HEAD)
    _spark("write.merge-schema", "Spark writes evolve the schema to the DataFrame's (boolean).",
           "lake_assets' writes never change the schema: a batch whose columns differ is refused"),
    _spark("write.merge-schema.explicit-cast", "Spark's schema merge also casts lossily (boolean).",
           "lake_assets' writes never change the schema: a batch whose columns differ is refused"),
    _spark("write.merge-schema.type-widening", "Spark's schema merge widens column types (boolean, "
           "Paimon 2.x).", "lake_assets' writes never change the schema: a batch whose columns differ is refused"),
    _spark("write.use-v2-write", "Spark writes through its DataSource V2 path (boolean).",
           "which Spark write path runs"),
    _spark("write.hive-style-dynamic-partition.enabled", "Column order of Spark's positional inserts with "
           "dynamic partitions (boolean, Paimon 2.x).", "how Spark SQL maps an INSERT's columns"),
    _spark("write.data-evolution.update-conflict-retry.max-attempts", "Retries of Spark updates of "
           "data-evolution tables (int, Paimon 2.x).", "Spark's retries of its column updates, which lake_assets "
           "does not write"),
    _spark("write.data-evolution.update-conflict-retry.wait-ms", "Wait between those retries (long).",
           "Spark's retries of its column updates, which lake_assets does not write"),
    _spark("read.changelog", "Spark's reads add a row-kind column (boolean).",
           "Paimon's Spark source takes it from a read's own options, not the table's (SparkSource.loadTable), "
           "as lake_assets' Spark source does"),
    _spark("read.stream.maxFilesPerTrigger", "Files per Spark micro-batch at most (int).", _SPARK_STREAM),
    _spark("read.stream.maxBytesPerTrigger", "Bytes per Spark micro-batch at most (long).", _SPARK_STREAM),
    _spark("read.stream.maxRowsPerTrigger", "Rows per Spark micro-batch at most (long).", _SPARK_STREAM),
    _spark("read.stream.minRowsPerTrigger", "Rows per Spark micro-batch at least (long).", _SPARK_STREAM),
    _spark("read.stream.maxTriggerDelayMs", "Longest delay between Spark micro-batches (long).", _SPARK_STREAM),
    _spark("read.allow.fullScan", "Whether Spark allows full scans of partitioned tables (boolean, "
           "Paimon 2.x).", "a guard of Spark's planner"),
    _spark("requiredSparkConfsCheck.enabled", "Spark checks the session's required configurations (boolean).",
           "Spark's session checks"),
    _spark("legacy-timestamp-mapping.enabled", "Spark maps TIMESTAMP to Spark's TIMESTAMP, not TIMESTAMP_NTZ "
           "(boolean, Paimon 2.x).", "the Spark type of a column, not its stored values"),
    _spark("source.split.target-size-with-column-pruning", "Spark sizes splits by the projected columns "
           "(boolean, Paimon 2.x).", "how Spark packs splits"),
    _spark("vector-search.lateral-join.parallelism", "Parallelism of Spark's lateral vector search (int).",
           _PARALLELISM),
    _spark("format-table.repair.collect-statistics", "MSCK REPAIR of format tables measures partitions "
           "(boolean, Paimon 2.x).", "Spark's commands on format tables"),
    _spark("format-table.statistics.parallelism", "Parallelism of format table statistics (int).",
           "Spark's commands on format tables"),
    # ---- CoreOptions keys read only by Paimon Java's jobs (CoreOptions.java, Paimon 0.9 to HEAD)
    _job("continuous.discovery-interval", "How often streaming sources look for new snapshots (duration).",
         "Flink's and Spark's streaming sources; lake_assets' streams poll when asked"),
    _job("streaming.read.snapshot.delay", "Delay of streaming reads behind new snapshots (duration).",
         "when a streaming source reads a snapshot, not what it reads"),
    _job("snapshot.watermark-idle-timeout", "Idle timeout of the watermark of Flink's source (duration).",
         _WATERMARK),
    _job("scan.manifest.parallelism", "Threads that read manifests in Java's planner (int).", _PARALLELISM),
    _job("scan.max-splits-per-task", "Splits Flink's enumerator queues per task (int).", _STREAM),
    _job("scan.plan-sort-partition", "Java's planner orders splits by partition (boolean).",
         "the order of splits; lake_assets' reads return rows in no particular order"),
    _job("file-reader-async-threshold", "File size above which Java reads asynchronously (memory size).",
         "how Java's readers do I/O"),
    _job("file-operation.thread-num", "Threads of Java's file operations (int; in Paimon 1.2 and older "
         "delete-file.thread-num, the threads of Java's expiry deletes).", _PARALLELISM, ("delete-file.thread-num",)),
    _job("async-file-write", "Java's writers write files asynchronously (boolean).", "how Java's writers do I/O"),
    _job("cache-page-size", "Page size of Java's lookup caches (memory size).", _LOOKUP_CACHE),
    _job("lookup.cache-file-retention", "Retention of lookup cache files (duration).", _LOOKUP_CACHE),
    _job("lookup.cache-max-disk-size", "Disk of lookup caches (memory size).", _LOOKUP_CACHE),
    _job("lookup.cache-rows", "Rows of lookup caches (long, Paimon 2.x).", _LOOKUP_CACHE),
    _job("lookup.cache-spill-compression", "Codec of lookup cache files.", _LOOKUP_CACHE),
    _job("lookup.cache.bloom.filter.enabled", "Bloom filters of lookup caches (boolean).", _LOOKUP_CACHE),
    _job("lookup.cache.bloom.filter.fpp", "False positive rate of those filters (double).", _LOOKUP_CACHE),
    _job("lookup.cache.high-priority-pool-ratio", "High-priority share of the lookup cache (double).",
         _LOOKUP_CACHE),
    _job("lookup.hash-load-factor", "Load factor of hash lookup caches (float).", _LOOKUP_CACHE),
    _job("lookup.local-file-type", "Kind of local lookup files (sort or hash; Paimon 1.3 and older).",
         _LOOKUP_CACHE),
    _job("lookup.merge-buffer-size", "Buffer of one key's merge in lookups (memory size).", _LOOKUP_CACHE),
    _job("lookup.merge-records-threshold", "Records after which lookups merge in a binary buffer (int).",
         _LOOKUP_CACHE),
    _job("lookup.continuous.discovery-interval", "How often lookup joins look for new snapshots (duration, "
         "Paimon 2.x).", _LOOKUP),
    _job("lookup.blob-as-descriptor", "Lookup joins keep BLOB descriptors, not bytes (boolean, Paimon 2.x).",
         _LOOKUP),
    _job("lookup-wait", "Flink's writer waits for lookup compaction before a checkpoint completes (boolean).",
         "when Flink's commits happen; lake_assets' writers compact at commit unless write-only",
         ("changelog-producer.lookup-wait",)),
    _job("local-merge-buffer-size", "Buffer in which Flink pre-merges rows of a key before its writers "
         "(memory size).", "rows of one key merged earlier merge to the same row"),
    _job("sort-engine", "Algorithm of Java's sorted-run merge (min-heap or loser-tree).",
         "both merge to the same rows"),
    _job("sort-spill-buffer-size", "Buffer of Java's spilled sort merge (memory size).", _MEMORY),
    _job("write-buffer-for-append", "Java's append writers buffer rows (boolean).",
         "memory of Java's append writers; a non-spillable buffer also flushes mid-round, each flush triggering "
         "a background compaction of a fixed-bucket append table, whose first pick is lake_assets' one pick "
         "per commit (docs/format.md §7.3)"),
    _job("write-max-writers-to-spill", "Writers of a Flink batch job above which they spill (int).", _MEMORY),
    _job("write.batch-size", "Rows per batch of Java's format writers (int, Paimon 1.0+; fallback "
         "orc.write.batch-size, which lake_assets' ORC writer honours).", "batching inside Java's writers"),
    _job("write.batch-memory", "Memory of a batch of Java's format writers (memory size, Paimon 1.3+).",
         "batching inside Java's writers"),
    _job("commit.user-prefix", "Prefix of the commit users of Java's jobs.", "names of Flink's commit users"),
    _job("commit.force-compact", "Java's writers wait for a compaction before each commit (boolean).",
         "when Java compacts; lake_assets' writers compact at commit unless write-only"),
    _job("snapshot.expire.execution-mode", "Whether Flink's committer expires in the background (sync or "
         "async).", "when Flink expires, not what"),
    _job("compaction.optimization-interval", "How often Flink's dedicated compaction compacts fully for "
         "the read-optimized system table (duration).", "when Flink compacts; lake_assets compacts when asked"),
    _job("cross-partition-upsert.bootstrap-parallelism", "Parallelism of the bootstrap of Flink's "
         "cross-partition index (int).", _PARALLELISM),
    _job("consumer.mode", "How Flink's source records consumer progress (exactly-once or at-least-once).",
         "Flink's source; expiry keeps every consumer's snapshot either way"),
    _job("consumer.ignore-progress", "A new Flink job ignores stored consumer progress (boolean).",
         "where Flink's source starts; expiry keeps every consumer's snapshot either way"),
    _job("sort-compaction.range-strategy", "Range strategy of the sort-compact action (size or quantity).",
         "the order of rows the sort-compact action writes"),
    _job("sort-compaction.local-sample.magnification", "Sample size of the sort-compact action (int).",
         "the order of rows the sort-compact action writes"),
    _job("zorder.var-length-contribution", "Bytes of variable-length columns in Z-order keys (int).",
         "the order of rows the sort-compact action writes"),
    _job("materialized-table.definition-query", "Flink materialized table: its query (Paimon 1.0+).",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.interval-freshness", "Flink materialized table: freshness interval.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.interval-freshness.time-unit", "Flink materialized table: its time unit.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.logical-refresh-mode", "Flink materialized table: logical refresh mode.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.refresh-mode", "Flink materialized table: physical refresh mode.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.refresh-status", "Flink materialized table: refresh status.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.refresh-handler-description", "Flink materialized table: refresh handler.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("materialized-table.refresh-handler-bytes", "Flink materialized table: serialized refresh handler.",
         "metadata of Flink's refresh job; the table is an ordinary Paimon table"),
    _job("log.changelog-mode", "Changelog mode of the log system (Paimon 1.3 and older).", _LOG),
    _job("log.consistency", "Consistency of the log system (Paimon 1.3 and older).", _LOG),
    _job("log.format", "Format of the log system's records (Paimon 1.3 and older).", _LOG),
    _job("log.key.format", "Format of the log system's keys (Paimon 1.3 and older).", _LOG),
    _job("log.ignore-delete", "The log system drops deletes (Paimon 1.1 to 1.3).", _LOG),
) | ROCKSDB_RULES  # rocksdb.*: the local state of Java's cross-partition index and lookups

__all__ = ["ENGINE_RULES"]

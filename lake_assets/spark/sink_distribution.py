"""``partition.sink-strategy`` on a plain ``df.write.format("lake")``: checked at the commit.

Paimon's Spark connector asks Spark for the distribution the option names
(``PaimonWriteRequirement``: rows clustered by the partition fields for every value but ``none``,
on a partitioned postpone or bucket-unaware table), so each partition is written by one task and
gets one file per task that held it. A Python data source cannot ask: pyspark 4.3's
``DataSourceWriter`` has no distribution or ordering hook, and the JVM side it runs in
(``PythonWrite``) implements only ``Write``, not ``RequiresDistributionAndOrdering``. So
``df.write`` receives the caller's rows as they are partitioned; `write_table`, the ingest job and
`repartition_by_bucket` cluster them first (`lake_assets.spark.shuffle.cluster_by_partition`).

What is done with the option on a plain ``df.write`` (decided here, issue 14 §2): the commit
looks at which task wrote which partition. When every partition was written by one task the
option was met (the caller clustered the rows) and nothing is said. Otherwise the commit lands as
written, valid for every Paimon reader (the option chooses a distribution of rows to writer tasks,
not a file layout a reader depends on: more files per partition, which compaction merges), and a
warning names the table, the option, the partitions written by several tasks and what clusters
the rows (once per batch write; once per streaming query, at its first micro-batch, not at every
micro-batch). It is not refused: the data would be thrown away after every task wrote it, for a
layout that reads the same (the data source learns the distribution only at the commit).

Which writes: rows written as given, i.e. a partitioned append table without buckets
(``bucket = -1``) and a postpone table's rows that go to ``bucket-postpone``
(``postpone.batch-write-fixed-bucket = false``, or a stream). A postpone table's batch writes into
real buckets are not concerned: Paimon stages such rows and rewrites them per bucket at the
commit whatever the option says (``SparkPostponeStagedCommitter``), and ours are planned per
(partition, bucket) by the driver (`lake_assets.spark.postpone_routing`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lake_assets.table_support import POSTPONE_BUCKET

if TYPE_CHECKING:
    from lake_assets.spark.task_sequences import TaskFiles
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

PARTITION_SINK_STRATEGY_KEY = "partition.sink-strategy"


def sink_strategy(store: FileStore) -> str:
    """The table's ``partition.sink-strategy``, normalised (``none`` when unset)."""
    return str(store.schema.core_options.get(PARTITION_SINK_STRATEGY_KEY, "none")).strip().lower()


def clusters_by_partition(store: FileStore) -> bool:
    """Whether Paimon's Spark write clusters this table's rows by partition before writing them as
    given: a partitioned append table without buckets or a postpone table, whose strategy is not
    ``none``."""
    if not store.schema.partition_keys or sink_strategy(store) == "none":
        return False
    bucket = store.schema.core_options.bucket
    return bucket == POSTPONE_BUCKET if store.schema.primary_keys else bucket == -1


def partitions_split_over_tasks(store: FileStore, tasks: Sequence[TaskFiles]) -> dict[bytes, int]:
    """Partition → number of tasks that wrote new data files into it, for the partitions written by
    more than one task, counting the files a clustered write concerns (``bucket-postpone`` of a
    postpone table; every bucket of an append table)."""
    postpone = bool(store.schema.primary_keys)
    writers: dict[bytes, int] = {}
    for task in tasks:
        for partition in {m.partition for m in task.messages
                          if m.new_files and (not postpone or m.bucket == POSTPONE_BUCKET)}:
            writers[partition] = writers.get(partition, 0) + 1
    return {p: n for p, n in writers.items() if n > 1}


def check_sink_distribution(store: FileStore, tasks: Sequence[TaskFiles],
                            warn: Callable[[], bool] | None = None) -> dict[bytes, int]:
    """Warn when a write's tasks did not meet the table's ``partition.sink-strategy`` (a partition
    written by more than one task); returns those partitions with their task counts (empty when
    the option does not apply or was met). Never raises for the layout: it reads the same.

    ``warn``, asked only when the option was not met: whether to warn (else the finding is logged
    at DEBUG). A streaming query passes "is this the query's first micro-batch", so that it warns
    once per query, not every micro-batch: each micro-batch's commit runs in a Python worker of its
    own, where nothing in memory tells whether an earlier one warned.

    The warning is a `logging` record of this module: in the Python worker of the driver that
    runs a data source's commit, the root logger has no handler of pyspark's (unless its worker
    logging is enabled), so Python's last-resort handler writes it to the worker's stderr, which
    the driver JVM copies to its own: a default pyspark session's console shows it."""
    if not clusters_by_partition(store):
        return {}
    split = partitions_split_over_tasks(store, tasks)
    if split:
        scan = store.file_store_scan()
        worst = max(split, key=lambda p: split[p])
        example = dict(zip(store.schema.partition_keys, scan.partition_values(worst), strict=True))
        level = logging.WARNING if warn is None or warn() else logging.DEBUG
        log.log(
            level,
            "Write to %s: option %s = %s asks for each partition's rows in one writer task, but %d "
            "partition(s) were written by several tasks (e.g. %s by %d), so they got one file per task. "
            "A Python data source cannot ask Spark for a distribution: cluster the rows first "
            "(df.repartition(%s) before df.write or df.writeStream, or lake_assets.spark.write_table, "
            "which does).%s",
            store.name, PARTITION_SINK_STRATEGY_KEY, sink_strategy(store), len(split), example, split[worst],
            ", ".join(repr(k) for k in store.schema.partition_keys),
            " A streaming query says so at its first micro-batch only." if warn is not None else "",
        )
    return split

"""Batch and streaming writes: Spark tasks write files, one commit makes them a snapshot.

Every task writes with a write-only `TableWriter` (no inline compaction) and returns its commit
messages as JSON inside a `LakeCommitMessage` (`lake_assets.spark.write_task`). ``commit`` runs
once, in yet another Python process, and turns all messages into one snapshot
(`lake_assets.spark.write_commit` holds its checks and retries).

Primary-key tables take any input partitioning: tasks of unrouted input write each bucket they
hold rows of, with sequence numbers interleaved by task (`lake_assets.spark.task_sequences`, which
also says which version of a key wins); `lake_assets.spark.write_table` routes each bucket to one
task, which writes one file per bucket instead of one per task and bucket.
A dynamic-bucket table (``bucket = -1``) needs one writer in all, its bucket assigner
(`check_one_dynamic_bucket_writer`).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from lake_assets.errors import LakeError, OptionError
from lake_assets.spark.column_subset import dataframe_write_columns
from lake_assets.spark.source_options import OVERWRITE_PARTITION, PARTITION_OVERWRITE_MODE, SourceOptions
from lake_assets.spark.task_outputs import checked_tasks, decode_lenient
from lake_assets.spark.task_sequences import BucketWriterConflictError, TaskFiles, check_sequences_disjoint
from lake_assets.spark.write_commit import (
    check_one_dynamic_bucket_writer,
    commit_marking_doubt,
    decode,
    injected_failure,
    keeps_files_in_doubt,
    landed,
)
from lake_assets.spark.write_task import LakeCommitMessage, write_task
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from lake_assets.table_support import POSTPONE_BUCKET

# A Python worker unpickles a task's writer from this module and runs only `write_task`: the
# commit (its conflict checks, overwrite, rescale, marking partitions done) runs in the driver's
# process, and a postpone table's batch plan in the driver's or only for such tables, so their
# modules are imported where they run, not in every worker (issue 17 §3). Unpickling a writer that
# carries a plan imports the plan's modules by itself.
if TYPE_CHECKING:
    from lake_assets.ops.commit import Overwrite
    from lake_assets.ops.postpone_batch import BatchBucketOptions
    from lake_assets.spark.postpone_routing import BucketPlan

log = logging.getLogger(__name__)

STREAMING_USER_PREFIX = "spark-"


def overwrite_mode(options: SourceOptions) -> str:
    mode = (options.get(PARTITION_OVERWRITE_MODE) or "static").strip().lower()
    if mode not in ("static", "dynamic"):
        raise OptionError(f"Option 'partitionOverwriteMode' must be static or dynamic, got {mode!r}")
    return mode


def overwrite_spec(options: SourceOptions) -> dict[str, Any] | None:
    """The ``overwrite-partition`` option: a JSON object of partition key → value, or None."""
    text = options.get(OVERWRITE_PARTITION)
    if text is None:
        return None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"Option 'overwrite-partition' is not JSON: {exc}") from None
    if not isinstance(spec, dict):
        raise OptionError(f"Option 'overwrite-partition' must be a JSON object of partition values, got {text!r}")
    return spec


class LakeBatchWriter(DataSourceArrowWriter):
    """``df.write.format("lake").mode("append" | "overwrite")``: all tasks → one snapshot.

    ``overwrite`` replaces the whole table; with ``partitionOverwriteMode=dynamic`` only the
    partitions the written rows fall in (Spark's SQL conf is not visible to Python data sources;
    `write_table` passes it on as this option); with ``overwrite-partition`` = a JSON object such
    as ``{"dt": "2024-01-01"}`` exactly the partitions matching it, even when no rows are written
    (rows outside it fail the commit).
    """

    def __init__(self, options: SourceOptions, overwrite: bool, input_columns: Sequence[str] | None = None) -> None:
        from lake_assets.ops.postpone_batch import BatchBucketOptions, fixed_bucket_batch_writes
        from lake_assets.spark.postpone_routing import PLAN_OPTION, BucketPlan, base_plan, write_options

        self.options = options
        self.overwrite = overwrite
        self.dynamic = overwrite and overwrite_mode(options) == "dynamic"
        self.partition_spec = overwrite_spec(options)
        if self.partition_spec is not None and not overwrite:
            raise OptionError("Option 'overwrite-partition' needs mode('overwrite')")
        if self.partition_spec is not None and self.dynamic:
            raise OptionError("Pass either 'overwrite-partition' (static) or partitionOverwriteMode=dynamic")
        # one fresh user per write: the committer's exactly-once key is (user, identifier)
        self.commit_user = str(uuid.uuid4())
        table = options.table()
        # checked here, in the driver, before Spark runs a task
        self.write_columns = dataframe_write_columns(table, input_columns)
        self.base_snapshot = table.snapshot_manager.latest_id()
        # a postpone table's batch writes go into real buckets (postpone.batch-write-fixed-bucket,
        # true or unset; this write's options override the table's, as in Paimon's connector): with
        # write_table's plan, else the counts the table alone decides
        self.plan: BucketPlan | None = None
        self.batch_options: BatchBucketOptions | None = None
        dynamic = write_options(options.raw)
        if fixed_bucket_batch_writes(table.store, dynamic):
            self.batch_options = BatchBucketOptions.of(table.store, dynamic)
            text = options.get((PLAN_OPTION,))
            self.plan = (BucketPlan.from_json(text) if text is not None
                         else base_plan(table, self.batch_options, overwrite=overwrite))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LakeCommitMessage:
        return write_task(self.options, self.commit_user, iterator, self.plan, overwrite=self.overwrite,
                          write_columns=self.write_columns)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from lake_assets.ops.commit import Overwrite
        from lake_assets.ops.mark_done import mark_done_after_commit
        from lake_assets.ops.overwrite import check_inside_partition, dynamic_overwrite
        from lake_assets.ops.overwrite import overwrite_spec as partition_overwrite
        from lake_assets.ops.postpone_fixed_bucket import resolve_staged
        from lake_assets.ops.rescale import rescale_written
        from lake_assets.spark.sink_distribution import check_sink_distribution

        table = self.options.table()
        committer = table.new_committer(self.commit_user)
        # every task's result checked before anything acts on any (task_outputs)
        _, tasks = checked_tasks(messages, table.store, self.commit_user)
        decoded = decode(tasks)
        if self.plan is not None and any(m.bucket == POSTPONE_BUCKET for m in decoded):
            # rows of partitions no count was planned for: plan them now, write them into real buckets
            try:
                resolved = resolve_staged(table.store, self.commit_user, decoded, options=self.batch_options,
                                          overwrite=self.overwrite)
            except BaseException:
                committer.abort([m for m in decoded if m.bucket != POSTPONE_BUCKET])
                raise
            decoded = [m for m in decoded if m.bucket != POSTPONE_BUCKET] + resolved
            tasks = [TaskFiles([m for m in t.messages if m.bucket != POSTPONE_BUCKET], t.stride) for t in tasks]
            tasks.append(TaskFiles(resolved))
        ow: Overwrite | None = None
        if self.plan is None:  # rows written as given: did the caller cluster them as the table asks?
            check_sink_distribution(table.store, tasks)
        try:
            check_one_dynamic_bucket_writer(table, messages)
            check_sequences_disjoint(table, tasks)
            if self.plan is not None and self.batch_options is not None and not (self.plan.measured or self.overwrite):
                # partitions written with their recorded counts unmeasured: where Paimon rescales,
                # rescale them (an OVERWRITE snapshot) and replay the written rows into the new count
                decoded = rescale_written(table.store, self.commit_user, decoded, self.batch_options)
            if self.partition_spec is not None:
                ow = partition_overwrite(table.store, self.partition_spec)
                check_inside_partition(table.store, decoded, ow)
            elif self.dynamic:
                ow = dynamic_overwrite(table.store, decoded)
            elif self.overwrite:
                ow = Overwrite(None)
        except LakeError:
            committer.abort(decoded)
            raise
        if self.dynamic and ow is None:
            return  # dynamic overwrite of no rows replaces nothing
        injected_failure(self.options, "before")
        commit_marking_doubt(committer, self.options, decoded, BATCH_COMMIT_IDENTIFIER, ow, check_committed=False)
        mark_done_after_commit(table.store, decoded)  # partition.end-input-to-done, as Paimon's Spark writes
        injected_failure(self.options, "after")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete the files of the tasks Spark reports; files of lost tasks are orphans for cleanup,
        as are those of a commit whose outcome stayed unknown (`keeps_files_in_doubt`)."""
        table = self.options.table()
        if keeps_files_in_doubt(table, self.commit_user, BATCH_COMMIT_IDENTIFIER):
            return
        if landed(table, self.commit_user, BATCH_COMMIT_IDENTIFIER, self.base_snapshot):
            return  # the snapshot exists (commit failed after it): its files are live
        table.new_committer(self.commit_user).abort(decode_lenient(messages, table.store, self.commit_user)[1])


class LakeStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("lake")``: one snapshot per micro-batch, exactly once.

    The commit user is ``spark-<query id>`` (stable across restarts from one checkpoint) and the
    commit identifier the batch id, so a batch Spark replays after a failure is committed at most
    once. Complete output mode overwrites the table each batch.
    """

    def __init__(self, options: SourceOptions, overwrite: bool, input_columns: Sequence[str] | None = None) -> None:
        self.options = options
        self.overwrite = overwrite
        self.write_columns = dataframe_write_columns(options.table(), input_columns)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LakeCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        query_id = ctx.getLocalProperty("sql.streaming.queryId") if ctx is not None else None
        if not query_id:
            raise LakeError("A streaming write to the lake source runs without a streaming query id")
        # the key index of a cross-partition table is kept for the query's next micro-batch
        return write_task(self.options, STREAMING_USER_PREFIX + query_id, iterator, overwrite=self.overwrite,
                          keep_key_index=not self.overwrite, write_columns=self.write_columns)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        from lake_assets.ops.commit import Overwrite
        from lake_assets.ops.mark_done import mark_done_after_commit
        from lake_assets.spark.sink_distribution import check_sink_distribution

        table = self.options.table()
        user, tasks = checked_tasks(messages, table.store)
        if user is None:
            # No task reported. Spark runs a write task even for a micro-batch of no input
            # partitions (SPARK-23271: one over nothing), and each reports the commit user
            # (spark-<query id>, which only tasks can read), so this is not expected; without the
            # user an empty snapshot the table asks for (commit_empty.py) cannot be exactly once.
            from lake_assets.ops.commit_empty import commits_empty_snapshot

            if commits_empty_snapshot(table.schema.core_options, batchId):
                log.warning("Micro-batch %s of %s reported no commit user: no empty snapshot committed",
                            batchId, self.options.identifier)
            return
        committer = table.new_committer(user)
        decoded = decode(tasks)
        if committer.is_committed(batchId):
            committer.abort(decoded)  # a replay of a committed batch: its new files are spare
            return
        # rows as given, checked every micro-batch; warned of at the query's first (none committed)
        check_sink_distribution(table.store, tasks,
                                warn=lambda: committer.last_committed_identifier() is None)
        try:
            check_one_dynamic_bucket_writer(table, messages)
            check_sequences_disjoint(table, tasks)
        except BucketWriterConflictError:
            committer.abort(decoded)
            raise
        injected_failure(self.options, "before")
        commit_marking_doubt(committer, self.options, decoded, batchId, Overwrite(None) if self.overwrite else None,
                             check_committed=True)
        mark_done_after_commit(table.store, decoded)  # each micro-batch, as Paimon's Spark sink
        injected_failure(self.options, "after")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Delete the micro-batch's files unless it was committed or its commit's outcome stayed
        unknown (`keeps_files_in_doubt`: left to orphan removal). A refused commit (a conflict:
        known not to have landed) deleted its files itself; this deletes those of a commit that
        failed before it began. Only tasks whose results pass the driver's checks are trusted
        (`decode_lenient`)."""
        table = self.options.table()
        user, decoded = decode_lenient(messages, table.store)
        if user is None or not decoded:
            return  # nothing to delete, or no one user whose commits tell whether the batch landed
        if keeps_files_in_doubt(table, user, batchId):
            return
        committer = table.new_committer(user)
        if not committer.is_committed(batchId):
            committer.abort(decoded)

"""What a Spark write task runs in its Python worker: its input into new files, and the message
that tells the commit about them (`LakeCommitMessage`).

Spark hands a task's rows as Arrow batches; `write_task` groups them into slices the core's writer
routes whole (`gather`), writes them with a write-only `TableWriter` (no inline compaction) and
returns the core's commit messages as JSON. The commit itself runs elsewhere
(`lake_assets.spark.write_commit`, `lake_assets.spark.writer`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from lake_assets.spark.schema import BUCKET_COLUMN, from_spark
from lake_assets.spark.task_sequences import TASK_SLOTS, current_task_slot

# A worker runs only the task: a postpone table's plan and writers are imported where they run
# (unpickling a writer that carries a plan imports the plan's modules by itself; issue 17 §3).
if TYPE_CHECKING:
    from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter
    from lake_assets.ops.postpone_write import PostponeWriter
    from lake_assets.ops.write import TableWriter
    from lake_assets.spark.postpone_routing import BucketPlan
    from lake_assets.spark.source_options import SourceOptions
    from lake_assets.table import Table


@dataclass
class LakeCommitMessage(WriterCommitMessage):
    """What one Spark task wrote: its commit user, its core commit messages as JSON, and the
    stride of its sequence numbers (`lake_assets.spark.task_sequences`)."""

    commit_user: str
    messages: tuple[str, ...] = ()
    sequence_stride: int = 1


def gather_bytes(table: Table) -> int:
    """How many Arrow bytes of Spark's batches a task hands its writer at once: half the table's
    ``write-buffer-size``, the slice the core's writer routes whole (`TableWriter.write_conformed`).

    Spark hands writers batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows (10,000
    by default, 100,000 in sessions `build_session` makes). Routing sorts each write by key per
    bucket, and a flush re-sorts a bucket that got several routed slices; a task whose rows fit
    in one slice is routed once, and each bucket flushes its one sorted slice as it is (issue 17
    §3 round 6: about 0.1 CPU s less per million rows than 128K-row writes). A task bigger than
    one slice holds, while a group is routed, the buffer, the group and its routed copy: up to
    about 1.5x ``write-buffer-size`` of Arrow data, still set by the option (a caller of
    ``write_arrow`` with a big table holds all of it)."""
    return max(1, table.schema.core_options.write_buffer_size // 2)


def gather(batches: Iterator[pa.RecordBatch], max_bytes: int) -> Iterator[list[pa.RecordBatch]]:
    """Consecutive batches grouped into lists of at most ``max_bytes`` Arrow bytes (a batch
    bigger than that alone); every batch is in exactly one group, in order. At most, not at
    least: a group just over the writer's slice would be routed as a full slice and a sliver."""
    group: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        nbytes = batch.nbytes
        if group and size + nbytes > max_bytes:
            yield group
            group, size = [], 0
        group.append(batch)
        size += nbytes
    if group:
        yield group


def _hashes_buckets(table: Table) -> bool:
    """Whether the table's writer places rows in fixed buckets by their bucket key, so that
    tasks of unrouted input may write one bucket: a primary-key table, or a fixed-bucket append
    table (``bucket = N``), whose bucket's files a reader orders by their sequence numbers."""
    return bool(table.primary_keys) or table.schema.core_options.bucket > 0


def write_task(options: SourceOptions, commit_user: str, batches: Iterator[pa.RecordBatch],
               plan: BucketPlan | None = None, *, overwrite: bool = False,
               keep_key_index: bool = False, write_columns: Sequence[str] | None = None) -> LakeCommitMessage:
    """Write one task's input into new files; on failure delete them and re-raise.

    Rows of a primary-key or fixed-bucket append table that did not come routed by bucket (no
    bucket column) are numbered in this task's sequence slot, so other tasks may write the same
    buckets (an append bucket's files then never share a first sequence number). With a
    ``plan`` (a batch write of a postpone table into real buckets) each partition is written with
    its planned bucket count, and rows of partitions the plan lacks are staged (`LakeBatchWriter`).
    An ``overwrite`` writes as the core's overwrite does: buckets start empty (the commit drops the
    replaced files and their hash index, so a dynamic-bucket assigner must not start from them).
    ``keep_key_index`` (micro-batches of a streaming write): a cross-partition table's key index is
    handed to the commit user's next micro-batch through the executor's local disk
    (`lake_assets.spark.key_index_cache`). ``write_columns``: the input holds only these columns
    of a data-evolution table (`lake_assets.spark.column_subset`).
    """
    table = options.table()
    writer: TableWriter | PostponeWriter | PostponeFixedBucketWriter
    if plan is not None:
        from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter

        writer = PostponeFixedBucketWriter(table.store, commit_user, plan.counts, default_count=plan.default,
                                           stage_unplanned=True, ignore_previous_files=overwrite)
    else:
        writer = table.new_writer(commit_user, write_only=True, ignore_previous_files=overwrite,
                                  write_columns=write_columns)
    keeping = _keeping_key_index(table, commit_user, writer) if keep_key_index else None
    target = table.arrow_schema
    stride = 1
    try:
        for group in gather(batches, gather_bytes(table)):
            if stride == 1 and _hashes_buckets(table) and BUCKET_COLUMN not in group[0].schema.names:
                stride = TASK_SLOTS
                writer.interleave_sequences(current_task_slot(), TASK_SLOTS)
            writer.write_arrow(from_spark(group, target))
        messages = writer.prepare_commit()
        if keeping is not None and (router := keeping.detach_key_index()) is not None:
            from lake_assets.spark import key_index_cache

            key_index_cache.keep(table, commit_user, router)
    except BaseException:
        writer.abort()
        raise
    finally:
        writer.close()
    return LakeCommitMessage(commit_user, tuple(m.to_json() for m in messages), stride)


def _keeping_key_index(table: Table, commit_user: str, writer: object) -> TableWriter | None:
    """``writer`` where it may keep a key index (a `TableWriter` of a cross-partition table), given
    the one kept for ``commit_user`` if any (`lake_assets.spark.key_index_cache`)."""
    from lake_assets.ops.write import TableWriter
    from lake_assets.spark import key_index_cache
    from lake_assets.table_support import cross_partition_fields

    if not isinstance(writer, TableWriter) or not (writer.dynamic and cross_partition_fields(writer.schema)):
        return None
    kept = key_index_cache.take(table, commit_user, writer.spill_dir)
    if kept is not None:
        writer.adopt_key_index(kept)
    return writer

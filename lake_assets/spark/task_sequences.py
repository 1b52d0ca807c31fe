"""Several Spark tasks writing one bucket of a primary-key (or fixed-bucket append) table in one commit.

A Python data source writer gets its input partitioned as the DataFrame is: any task may hold rows
of any bucket. Paimon orders the versions of a key by sequence number, and every writer numbers
a bucket's rows from the bucket's maximum + 1, so two tasks writing one bucket would produce the
same numbers and readers could keep either version of a key.

So a task writing unrouted input takes a slot, its Spark partition id, and numbers each bucket's
rows ``base + slot``, ``base + slot + TASK_SLOTS``, ... (`TableWriter.interleave_sequences`):
tasks never share a number, and every Paimon reader orders the versions of a key the same way.
Which version wins when one write holds a key several times: within one input partition the
later row; across partitions the version with the higher number, which depends on the key's place
among its task's rows of that bucket (the writer numbers a routed batch in key order) - fixed for a
given input partitioning, but not an order a user can rely on. Spark defines no order across
partitions, and Paimon's own Spark writer, which shuffles rows to one writer per bucket, keeps
whichever version arrives last at that writer - so a write holding a key several times is equally
undefined there; write one version per key, or order them with ``sequence.field``.

Input routed by `lake_assets.spark.repartition_by_bucket` (it carries the bucket column) has one
task per bucket and numbers rows densely, as an in-process writer does.

The cost of slots: sequence numbers grow by ``TASK_SLOTS`` per row a task writes to a bucket
(2^16 × 1M rows per task and bucket is 2^36 of Paimon's 2^63), which is harmless, and numbers
far apart pack less often into the one-integer sorts of the merge (it then sorts by columns).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from lake_assets.errors import LakeError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.table import Table
from lake_assets.table_support import POSTPONE_BUCKET

# Distinct slots per write: the most input partitions one unrouted write may have.
TASK_SLOTS = 1 << 16


class BucketWriterConflictError(LakeError):
    """Tasks of one commit wrote a bucket of a primary-key table with shared sequence numbers."""


@dataclass(frozen=True)
class TaskFiles:
    """What one Spark task wrote: its core messages, and the stride of its sequence numbers."""

    messages: Sequence[CommitMessage]
    stride: int = 1


def current_task_slot() -> int:
    """The slot of the running Spark task: its partition id (unique among the tasks of a write)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    slot = ctx.partitionId() if ctx is not None else 0
    if slot >= TASK_SLOTS:
        raise LakeError(
            f"A write of unrouted rows to a primary-key table takes at most {TASK_SLOTS} input partitions "
            f"(this task is partition {slot}): coalesce the input, or write with "
            "lake_assets.spark.write_table, which routes each bucket to one task"
        )
    return slot


@dataclass(frozen=True)
class _Span:
    lo: int
    hi: int
    stride: int
    residue: int  # of every number in the span modulo the stride (0 for stride 1)


def _span(files: Sequence[DataFileMeta], stride: int) -> _Span | None:
    seqs = [(f.min_sequence_number, f.max_sequence_number) for f in files]
    if not seqs:
        return None
    lo, hi = min(s for s, _ in seqs), max(e for _, e in seqs)
    residues = {x % stride for pair in seqs for x in pair}
    if len(residues) > 1:
        raise BucketWriterConflictError(
            f"Files of one Spark task carry sequence numbers off its stride {stride}: {sorted(residues)}")
    return _Span(lo, hi, stride, residues.pop())


def _shared(a: _Span, b: _Span) -> bool:
    """Whether two tasks' sequence numbers in one bucket may coincide."""
    if a.hi < b.lo or b.hi < a.lo:
        return False
    return not (a.stride == b.stride > 1 and a.residue != b.residue)


def check_sequences_disjoint(table: Table, tasks: Sequence[TaskFiles]) -> None:
    """Refuse tasks whose sequence numbers in a bucket of a primary-key table may coincide (of a
    fixed-bucket append table: whose files in a bucket share a first number, `_check_first_numbers_distinct`).

    Slots keep them apart when every task restored its buckets from the same snapshot; a commit
    landing between the tasks' starts can shift one task's base onto another's numbers, and
    input routed by a column that does not route by bucket gives two dense writers one bucket.
    """
    if not table.primary_keys:
        if table.schema.core_options.bucket > 0:
            _check_first_numbers_distinct(table, tasks)
        return
    spans: dict[tuple[bytes, int], list[_Span]] = defaultdict(list)
    for task in tasks:
        for m in task.messages:
            if m.bucket == POSTPONE_BUCKET:
                # a postpone file's numbers order its own writer's rows only (a postpone writer
                # numbers from 0, whatever its stride): the compaction replays each writer's
                # files on their own (ops/postpone.py), so tasks may share numbers
                continue
            span = _span([*m.new_files, *m.new_changelog], task.stride)
            if span is not None:
                spans[(m.partition, m.bucket)].append(span)
    for (partition, bucket), found in spans.items():
        for a, b in itertools.combinations(found, 2):
            if _shared(a, b):
                where = _partition_values(table, partition)
                raise BucketWriterConflictError(
                    f"Cannot commit to {table.name}: bucket {bucket} of partition {where} was written by "
                    f"{len(found)} Spark tasks in one commit with shared sequence numbers, so readers "
                    "could keep any version of a key. Nothing was committed. Write again (a commit that "
                    "landed while the tasks started moves their numbering), or route each bucket to one "
                    "task with lake_assets.spark.write_table / repartition_by_bucket."
                )


def _partition_values(table: Table, partition: bytes) -> dict[str, object]:
    """A partition's values by key, for messages."""
    values = deserialize_row(partition, table.schema.types(list(table.partition_keys)))
    return dict(zip(table.partition_keys, values, strict=True))


def _check_first_numbers_distinct(table: Table, tasks: Sequence[TaskFiles]) -> None:
    """Refuse tasks of a fixed-bucket append table whose files in one bucket share a first
    sequence number. Readers order such files by manifest order and lake_assets' compaction
    keeps that order, but Java 0.9's compaction manager keeps one file per first number (a
    ``TreeSet``): it would never compact the other, and would read it before the compacted rows
    of its neighbour. Slots keep the numbers apart unless a commit landed between the tasks' starts."""
    firsts: dict[tuple[bytes, int], dict[int, int]] = defaultdict(dict)  # -> first number -> task
    for index, task in enumerate(tasks):
        for m in task.messages:
            for f in m.new_files:
                owner = firsts[(m.partition, m.bucket)].setdefault(f.min_sequence_number, index)
                if owner != index:
                    where = _partition_values(table, m.partition)
                    raise BucketWriterConflictError(
                        f"Cannot commit to {table.name}: bucket {m.bucket} of partition {where} was written by "
                        f"two Spark tasks whose files both start at sequence number {f.min_sequence_number}; "
                        "Paimon 0.9's compaction keeps one file per first number and would leave the other out "
                        "(reading it before its neighbour's compacted rows). Nothing was committed. Write again "
                        "(a commit that landed while the tasks started moves their numbering), or route each "
                        "bucket to one task with lake_assets.spark.write_table / repartition_by_bucket.")

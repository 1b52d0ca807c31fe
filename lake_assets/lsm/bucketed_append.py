"""Which files of a fixed-bucket append table's bucket a compaction rewrites (Paimon 0.9's
``BucketedAppendCompactManager``), from file metadata only.

An append bucket with ``bucket = N > 0`` is an ordered stream: its files, in sequence-number order,
hold the bucket's rows in the order they were written, and every reader (Java's
``AppendOnlySplitGenerator``, ours) reads them in that order. So a compaction only ever merges
files that are adjacent in that order, and its output takes their place (`output_sequences`).

Two picks, as Java's manager makes them:

* best effort (`pick_bucketed_append`, inline after a writer's flush and ``compact()``): files in
  sequence order slide through a window that closes once it holds ``target-file-size`` bytes in at
  least ``compaction.min.file-num`` files, or ``compaction.max.file-num`` files whatever their
  size; a window that reaches the target size with fewer files drops its oldest file;
* full (`pick_bucketed_append_full`, ``compact(full=True)``): leading files already at the target size stay,
  the rest is rewritten when at least 3 files remain and small ones outnumber large ones; with
  deletion vectors, leading files stay only when they have no vector, and the rest is always
  rewritten (Java's ``FullCompactTask`` with a ``DeletionVectorsMaintainer``).

A group is then extended over the files after it whose first sequence number its output could
reach (`keeping_order`): files of one bucket may share numbers (pypaimon 2.1 numbers every file
0/0; Spark tasks of one commit interleave theirs), and an output numbered one per row from the
group's first number must sort before every file that followed the group, or readers would put
that file's rows among the group's. Java 0.9's manager instead keeps one file per first number
(its ``TreeSet``) and never compacts the others, which can move them before a compacted
neighbour's rows; Paimon 1.4 (#6741, a ``PriorityQueue``) compacts them all, as here.

The unaware-bucket planner (`compact_strategy.pick_append_small_files`) is another rule, Paimon's
``UnawareAppendTableCompactionCoordinator``'s; it is not used here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions

# compaction.max.file-num when the table leaves it unset: Java's AppendOnlyFileStoreWrite
# (``compactionMaxFileNum().orElse(5)``) for bucketed append tables
DEFAULT_MAX_FILE_NUM = 5
# Java's FULL_COMPACT_MIN_FILE: a full compaction rewrites no fewer files
FULL_COMPACT_MIN_FILES = 3


def sequence_order(files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """A bucket's files in the order its rows were written: by first sequence number (Java's
    ``fileComparator``), ties in the order given, which is the manifests' (the order the files
    were added), as readers keep them: Java's and ours sort a bucket's files stably by that number
    alone. Ties happen: pypaimon 2.1 numbers every file 0/0, and Java's compaction manager, whose
    set of files is ordered by the number alone, then sees only one of them."""
    return sorted(files, key=lambda f: f.min_sequence_number)


def pick_bucketed_append(files: Iterable[DataFileMeta], target_file_size: int, min_file_num: int,
                         max_file_num: int) -> list[DataFileMeta]:
    """The adjacent files (in sequence order) a best-effort compaction of the bucket rewrites into
    one rolling output, or ``[]``: Java's ``pickCompactBefore``."""
    ordered = sequence_order(files)
    window: list[DataFileMeta] = []
    size = 0
    for f in ordered:
        window.append(f)
        size += f.file_size
        if (size >= target_file_size and len(window) >= min_file_num) or len(window) >= max_file_num:
            return window
        if size >= target_file_size:
            # the window shifts one file on: its oldest file is big enough on its own account
            size -= window.pop(0).file_size
    return []


def pick_bucketed_append_full(files: Iterable[DataFileMeta], target_file_size: int,
                              vectored: Collection[str] | None = None) -> list[DataFileMeta]:
    """The files a full compaction of the bucket rewrites (Java's ``FullCompactTask``), or ``[]``:
    in sequence order, leading files at the target size stay; the rest is rewritten when at least
    3 files remain and small ones outnumber large ones. With deletion vectors (``vectored``: the
    names of the files that have one, maybe none), a leading file stays only when it has no
    vector, and the rest is rewritten whatever it holds (Java: "the data file with deletion file
    always need to be compacted")."""
    ordered = sequence_order(files)
    start = 0
    while start < len(ordered) and ordered[start].file_size >= target_file_size and (
            vectored is None or ordered[start].file_name not in vectored):
        start += 1
    rest = ordered[start:]
    if vectored is not None:
        return rest
    small = sum(1 for f in rest if f.file_size < target_file_size)
    return rest if len(rest) >= FULL_COMPACT_MIN_FILES and small > len(rest) - small else []


def keeping_order(files: Iterable[DataFileMeta], group: list[DataFileMeta]) -> list[DataFileMeta]:
    """``group`` (adjacent files of the bucket in sequence order) and the files after it that its
    output could otherwise pass: the output is numbered one per row from the group's first number,
    so a following file whose first number is below that plus the group's rows (shared or
    interleaved numbers, never a single writer's bucket) would sort among the output, or before
    it on a tie (it is older in the manifests), and its rows would be read among the group's.
    Taken into the group, its rows keep their place; the group grows until the next file starts
    past every number the output can take."""
    if not group:
        return group
    ordered = sequence_order(files)
    names = [f.file_name for f in ordered]
    end = names.index(group[-1].file_name) + 1
    first = output_sequences(group)
    out = list(group)
    rows = sum(f.row_count for f in out)
    while end < len(ordered) and ordered[end].min_sequence_number < first + rows:
        out.append(ordered[end])
        rows += ordered[end].row_count
        end += 1
    return out


def bucketed_append_groups(files: Iterable[DataFileMeta], opts: CoreOptions, *, full: bool,
                           commits_since_full: int | None = None,
                           vectored: Collection[str] | None = None) -> list[list[DataFileMeta]]:
    """The one group of adjacent files a compaction of the bucket rewrites (none: ``[]``), with the
    table's options: the full pick with ``full`` and, as Flink's full-compaction sink, once
    ``commits_since_full`` reaches ``full-compaction.delta-commits``; else the best-effort pick.
    ``vectored``: with deletion vectors, the files that have one (see `pick_bucketed_append_full`).
    The group then takes in the files its output could pass (`keeping_order`)."""
    files = list(files)
    target = opts.target_file_size
    delta = opts.full_compaction_delta_commits
    if full or (delta is not None and commits_since_full is not None and commits_since_full >= delta):
        group = pick_bucketed_append_full(files, target, vectored)
    else:
        max_files = opts.compaction_max_file_num
        group = pick_bucketed_append(files, target, opts.compaction_min_file_num,
                                     DEFAULT_MAX_FILE_NUM if max_files is None else max_files)
    group = keeping_order(files, group)
    return [group] if group else []


def output_sequences(group: Iterable[DataFileMeta]) -> int:
    """The first sequence number of a compaction's output rows, numbered one per row from there
    (Java's ``compactRewrite``: a counter from the first input's ``minSequenceNumber``), so that the
    output files' ranges never overlap one another and stay within their inputs' span."""
    return sequence_order(group)[0].min_sequence_number

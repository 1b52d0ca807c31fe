"""The dedicated compaction of postpone-bucket tables (``bucket = -2``, Paimon 1.1+).

Writers of a postpone table leave rows unsorted in ``bucket-postpone``; batch readers skip those
files until a compaction assigns the rows to real buckets. This module is that compaction, as
Paimon's (``PostponeBucketCompactOperator``, ``PostponeUtils``, ``BucketFiles``) does it:

* per partition, the bucket count is the one the partition's real-bucket files record in their
  manifest entries' ``totalBuckets``; a partition without real buckets yet gets
  ``postpone.default-bucket-num``, or a count estimated from its postpone files (`new_bucket_num`);
* each partition's postpone files are replayed in order: by creation time (Java's order; ties
  keep manifest order), each file by sequence number; the rows, with their row
  kinds, go through the fixed-bucket writer of that bucket count, which numbers them after what
  the bucket holds, so they supersede it through the table's merge engine;
* the writer then compacts every bucket it wrote and every real bucket of the partition holding
  level-0 files (Java's ``getLevel0Buckets``; the table's ``write-only`` does not apply, as in
  Java's ``tableForPostponeRewrite``): postpone writers never compact, so without this level 0
  would pile up, and first-row, lookup and deletion-vector readers, which skip level 0, would
  never see the rows;
* ``full`` (not in Paimon, whose postpone compaction ignores it) then compacts every real bucket
  of the partitions into the top level with the partition's bucket count, as a fixed-bucket
  table's full compaction: universal compaction alone leaves small files in buckets it does not
  pick, and in buckets without level-0 files it never runs;
* one COMPACT snapshot deletes the postpone files and adds the new files, as Java's
  ``BucketFiles`` turns a writer's messages into one compaction per bucket (new files the same
  pass compacted away are deleted, never committed).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lake_assets.errors import LakeError, OptionError, UnsupportedFeatureError
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact.plan import partition_predicate
from lake_assets.ops.compact.run import CompactResult, summarize
from lake_assets.ops.postpone_files import read_postpone_file
from lake_assets.ops.postpone_table import DEFAULT_BUCKET_NUM_KEY, TARGET_ROWS_KEY, TARGET_SIZE_KEY, record_bucket_count
from lake_assets.ops.write import TableWriter
from lake_assets.option_types import parse_memory_size
from lake_assets.spec.manifest import DataFileMeta, ManifestEntry
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import POSTPONE_BUCKET, Op


def _positive(store: FileStore, key: str, raw: object, parse: Callable[[object], int]) -> int:
    try:
        n = parse(raw)
    except (ValueError, LakeError):
        n = 0
    if n <= 0:
        raise OptionError(f"Cannot compact {store.name}: {key} = {raw!r} must be a positive number")
    return n


def new_bucket_num(store: FileStore, files: list[ManifestEntry]) -> int:
    """The bucket count of a partition getting real buckets for the first time, as Paimon's
    ``PostponeUtils`` decides it, measured on its postpone files (`estimate_bucket_num`).

    The size is the files' stored (compressed) size: that is what Java's compaction measures
    (``PostponeUtils.getPostponeFileSizes`` sums ``fileSize``; its docs: "ceil(postpone_file_size /
    postpone.target-size-per-bucket)"), since a postpone file records no uncompressed size; the
    plain ceiling, uncapped (``PostponeUtils.computeBucketNum``). Batch writes into real buckets
    decide otherwise (`lake_assets.ops.postpone_batch.decide_bucket_num`: the batch alone,
    rounded up to a power of two, as HEAD's ``decideFixedBucketNum``)."""
    return estimate_bucket_num(store, sum(e.file.row_count for e in files), sum(e.file.file_size for e in files))


def estimate_bucket_num(store: FileStore, rows: int, nbytes: int) -> int:
    """The bucket count of a partition without real buckets yet holding ``rows`` rows of ``nbytes``
    bytes: ``postpone.default-bucket-num`` if set, else ceil(rows /
    ``postpone.target-row-num-per-bucket``) if that is set, else ceil(bytes /
    ``postpone.target-size-per-bucket``) (default 1 GiB); at least 1."""
    opts = store.schema.options
    if DEFAULT_BUCKET_NUM_KEY in opts:
        return _positive(store, DEFAULT_BUCKET_NUM_KEY, opts[DEFAULT_BUCKET_NUM_KEY], lambda v: int(str(v).strip()))
    if TARGET_ROWS_KEY in opts:
        target = _positive(store, TARGET_ROWS_KEY, opts[TARGET_ROWS_KEY], lambda v: int(str(v).strip()))
        value = rows
    else:
        raw = opts.get(TARGET_SIZE_KEY, "1 gb")
        target = _positive(store, TARGET_SIZE_KEY, raw, lambda v: parse_memory_size(v, TARGET_SIZE_KEY))
        value = nbytes
    return 1 if value <= 0 else (value - 1) // target + 1


def _writer_prefix(store: FileStore, file_name: str) -> str:
    """The writer a postpone file comes from: its name up to ``-w-`` (Paimon's postpone writers name
    files ``<prefix>-u-<commit user>-s-<write id>-w-<uuid>-<n>``)."""
    at = file_name.rfind("-w-")
    if at < 0:
        raise UnsupportedFeatureError(
            f"Cannot compact {store.name}: postpone file {file_name} does not name its writer (-w-), "
            "so the order of its rows cannot be known"
        )
    return file_name[: at + 3]


def _replay_order(store: FileStore, entries: list[ManifestEntry]) -> list[ManifestEntry]:
    """Files by creation time, as Java's ``PostponeBucketCompactSplitSource`` replays them ("we must
    replay the written records in exact order"); ties keep manifest order (a writer's rolled files
    share a millisecond). Every file must name its writer (`_writer_prefix`)."""
    for e in entries:
        _writer_prefix(store, e.file.file_name)
    return sorted(entries, key=lambda e: e.file.creation_time_ms or 0)


def _as_compaction(m: CommitMessage) -> tuple[CommitMessage, list[DataFileMeta]]:
    """A writer's message as one compaction (Java's ``BucketFiles``): its new files become
    compaction output, except those its own compaction already replaced, which no snapshot will
    ever name; those are returned to be deleted (a file the compaction only moved up a level
    stays: it is in the output)."""
    new = {f.file_name for f in m.new_files}
    replaced = {f.file_name for f in m.compact_before if f.file_name in new}
    kept = {f.file_name for f in m.compact_after}
    message = CommitMessage(
        m.partition, m.bucket, m.total_buckets,
        compact_before=tuple(f for f in m.compact_before if f.file_name not in replaced),
        compact_after=tuple(f for f in m.new_files if f.file_name not in replaced) + m.compact_after,
        compact_changelog=m.new_changelog + m.compact_changelog,
        index_before=m.index_before, index_after=m.index_after,
    )
    return message, [f for f in m.new_files if f.file_name in replaced and f.file_name not in kept]


@dataclass(frozen=True)
class PostponeUnit:
    """One partition's postponed files (in replay order) and the real bucket count they go into:
    independent of other partitions, so a distributed job runs each unit in its own task."""

    partition: bytes
    buckets: int
    files: tuple[ManifestEntry, ...]
    # real buckets of the partition holding level-0 files: compacted too (Java's getLevel0Buckets)
    level0_buckets: tuple[int, ...] = ()
    # a full compaction (`compact_postpone` with full): every real bucket of the partition, the
    # ones written included, is compacted into the top level
    full: bool = False

    @property
    def input_bytes(self) -> int:
        return sum(e.file.file_size for e in self.files)

    @property
    def input_rows(self) -> int:
        return sum(e.file.row_count for e in self.files)


RunPostponeUnits = Callable[[FileStore, list[PostponeUnit]], list[CommitMessage]]
"""Runs postpone units (`run_postpone_unit` each); returns their messages. On failure it deletes
what the units wrote and raises, as `lake_assets.ops.compact.RunTasks`."""


def plan_postpone(
    store: FileStore, partitions: Iterable[dict[str, Any]] | None = None, *, full: bool = False
) -> list[PostponeUnit]:
    """The postpone units of the latest snapshot (of ``partitions`` only, if given); reads
    manifests only. With ``full`` every partition holding real buckets is a unit too, all of
    whose buckets are compacted fully."""
    pred = partition_predicate(store, partitions)
    snap = store.snapshot_manager.latest()
    if snap is None:
        return []
    scan = store.file_store_scan(Op.COMPACT)
    entries = scan.live_entries(snap)
    if pred is not None and pred.clauses:
        pkeys = list(store.schema.partition_keys)
        entries = [e for e in entries
                   if pred.test_values(dict(zip(pkeys, scan.partition_values(e.partition), strict=True)))]
    known: dict[bytes, int] = {}
    postponed: dict[bytes, list[ManifestEntry]] = defaultdict(list)
    level0: dict[bytes, set[int]] = defaultdict(set)
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            postponed[e.partition].append(e)
        elif e.bucket >= 0:  # a count of 0 or less raises (record_bucket_count)
            record_bucket_count(store, known, e)
            if e.file.level == 0:
                level0[e.partition].add(e.bucket)
    # As Java's postpone compaction: every partition with postponed rows or with real buckets
    # holding level-0 files (which only a compaction ever lifts: postpone writers never compact);
    # a full compaction takes every partition with real buckets as well.
    touched = list(dict.fromkeys([*postponed, *level0, *(known if full else ())]))
    return [PostponeUnit(p, known.get(p) or new_bucket_num(store, postponed[p]),
                         tuple(_replay_order(store, postponed[p])), tuple(sorted(level0.get(p, ()))), full)
            for p in touched]


def run_postpone_unit(store: FileStore, unit: PostponeUnit, commit_user: str, *,
                      spill_dir: str | None = None) -> list[CommitMessage]:
    """Write one unit's postponed rows into its real buckets; the messages (not committed): the
    new files as compaction output, the postpone files as compaction input. The writer spills
    under ``spill_dir`` (`lake_assets.ops.spill.spill_root`)."""
    # Java's PostponeBucketCompactOperator: the rows go through the bucket's writer, which then
    # compacts every bucket it wrote and every bucket holding level-0 files (universal compaction,
    # so first-row, lookup and deletion-vector tables lift level 0 as their readers need), and the
    # result is one compaction per bucket. A full compaction (which Paimon's postpone compaction
    # does not offer: its Flink action and Spark procedure ignore full for this mode) compacts
    # every bucket of the partition into the top level instead, as a fixed-bucket table's full
    # compaction with the partition's bucket count: nothing else lifts small files out of real
    # buckets that hold no level-0 file.
    writer = TableWriter(store, commit_user, real_buckets=unit.buckets, spill_dir=spill_dir)
    try:
        for e in unit.files:
            rows, kinds = read_postpone_file(store, e)
            if rows.num_rows:
                writer.write_arrow(rows, kinds=kinds)
        values = store.file_store_scan(Op.COMPACT).partition_values(unit.partition)
        for bucket in range(unit.buckets) if unit.full else unit.level0_buckets:
            writer.request_compaction(values, bucket, full=unit.full)
        written = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        writer.close()
    messages: list[CommitMessage] = []
    for m in written:
        message, unused = _as_compaction(m)
        messages.append(message)
        store.file_io.delete_many([p for f in unused for p in store.written_file_paths(m.partition, m.bucket, f)])
    if unit.files:
        messages.append(CommitMessage(unit.partition, POSTPONE_BUCKET, POSTPONE_BUCKET,
                                      compact_before=tuple(e.file for e in unit.files)))
    return messages


def compact_postpone(
    store: FileStore,
    *,
    partitions: Iterable[dict[str, Any]] | None = None,
    commit_user: str | None = None,
    run_units: RunPostponeUnits | None = None,
    full: bool = False,
    spill_dir: str | None = None,
) -> CompactResult:
    """Move every postponed row (of ``partitions``, if given) into real buckets in one COMPACT
    snapshot (none if nothing waits). ``full`` then also compacts every real bucket of those
    partitions into the top level (`run_postpone_unit`). ``run_units`` runs the planned units
    (default: one after another in this process; a Spark job passes its own, one Spark task per
    unit). The units' writers spill under ``spill_dir`` (`lake_assets.ops.spill.spill_root`)."""
    started = time.perf_counter()
    user = commit_user or f"compact-{uuid.uuid4()}"
    units = plan_postpone(store, partitions, full=full)
    if run_units is None:
        messages: list[CommitMessage] = []
        try:
            for unit in units:
                messages.extend(run_postpone_unit(store, unit, user, spill_dir=spill_dir))
        except BaseException:
            # never committed: the finished units' files would be orphans (abort deletes only
            # files no snapshot or tag references)
            TableCommitter(store, f"compact-abort-{uuid.uuid4()}").abort(messages)
            raise
    else:
        messages = run_units(store, units) if units else []
    ids: list[int] = []
    if messages:
        store.fault_point("compact.before_commit")
        # as the regular compaction: a failed commit leaves its new files to orphan removal, since
        # the outcome may be unknown and they may be referenced; and as it, runs the commit-time
        # lifecycle whatever write-only says (Java's PostponeUtils.tableForPostponeRewrite)
        ids = TableCommitter(store, user, write_only=False).commit(messages, check_committed=False)
    return summarize(messages, ids[-1] if ids else None, len(units), started)

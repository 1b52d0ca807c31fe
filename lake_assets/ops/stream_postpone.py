"""What change reads see of a postpone-bucket table (``bucket = -2``, Paimon 1.2+ semantics).

Writers of a postpone table leave rows in ``bucket-postpone``; the dedicated compaction
(`lake_assets.ops.postpone`) moves them into real buckets in a COMPACT snapshot. Paimon's scans
treat those files as follows (``DataTableStreamScan``, ``AbstractBatchTableScan``,
``MergeFileSplitRead.createReader``), and so do ours:

* streaming reads (`StreamEnumerator`, the Spark streaming source) with ``changelog-producer =
  none`` scan every bucket: each APPEND snapshot's postponed files are emitted as written (no
  merge: every row with its own row kind, a key written twice in a commit appears twice), the
  compaction's COMPACT snapshot is skipped like any other, so a row is emitted once, when it is
  written; the full phase of a stream (``latest-full``, ``from-snapshot-full``,
  ``earliest-full``) emits the merged real buckets plus the files still waiting in
  ``bucket-postpone``, read the same raw way (Java reads bucket -2 splits without a merge);
* streaming reads with a changelog producer (``input``, ``lookup``, ``full-compaction``) scan
  only the real buckets (``onlyReadRealBuckets``): postponed rows appear when the compaction
  writes them, through the changelog files it commits (``input``: the replayed rows;
  ``lookup`` / ``full-compaction``: the changes it produces against what the buckets held);
* batch reads, and the incremental batch reads (`read_changes`, Paimon's ``incremental-between``),
  scan only the real buckets, whatever the producer: with ``none`` the postponed rows never
  appear in a delta there (a COMPACT snapshot is no delta), with a producer they come through the
  compaction's changelog.

Paimon 1.1 scanned only real buckets in streams too (fixed by apache/paimon#5783 in 1.2); Paimon
Java 0.9, the test oracle of other table kinds, predates postpone tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.refusal import Op
from lake_assets.spec.manifest import DataFileMeta, ManifestEntry
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table_support import POSTPONE_BUCKET

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def sees_postponed(store: FileStore, *, streaming: bool) -> bool:
    """Whether a change read of ``store`` reads ``bucket-postpone`` files: only a streaming read
    of a postpone table without a changelog producer does (Paimon's ``DataTableStreamScan``);
    every other scan of a postpone table skips them (``onlyReadRealBuckets``)."""
    return streaming and is_postpone_table(store) and store.schema.core_options.changelog_producer == "none"


def skips_postponed(store: FileStore, *, streaming: bool) -> bool:
    """Whether a change read's manifest scan of ``store`` must drop ``bucket-postpone`` entries
    (`FileStoreScan.real_buckets_only`); False for tables of other bucket modes."""
    return is_postpone_table(store) and not sees_postponed(store, streaming=streaming)


def postponed_entries(store: FileStore, snap: Snapshot) -> list[ManifestEntry]:
    """The files of ``snap`` still waiting in ``bucket-postpone`` (for a streaming read that sees
    them, `sees_postponed`); manifests without bucket -2 are pruned by their bucket range."""
    scan = store.file_store_scan(Op.STREAM, real_buckets_only=False)
    return [e for e in scan.live_entries(snap, buckets={POSTPONE_BUCKET}) if e.bucket == POSTPONE_BUCKET]


def read_order(bucket: int, files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """The order a change split's files are read in, so each key's changes come in write order.

    A real bucket's files by sequence number (one numbering per bucket). Postpone writers number
    their rows from 0 each (only one writer's rows are ordered by it), so ``bucket-postpone``
    files go by creation time, as the postpone compaction replays them, then by sequence number
    (a writer's rolled files share a millisecond)."""
    if bucket == POSTPONE_BUCKET:
        return sorted(files, key=lambda f: (f.creation_time_ms or 0, f.min_sequence_number))
    return sorted(files, key=lambda f: f.min_sequence_number)


__all__ = ["postponed_entries", "read_order", "sees_postponed", "skips_postponed"]

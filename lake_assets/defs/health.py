"""Pure evaluation of `Table.health()` rows against a table's maintenance policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa

from lake_assets.defs.config import MaintenancePolicy
from lake_assets.ops.visibility_wait import deletion_vectors_enabled, table_waits_for_visibility
from lake_assets.table_support import POSTPONE_BUCKET

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


@dataclass(frozen=True)
class Breach:
    """A (partition, bucket) over one or more of the policy's thresholds."""

    partition: str
    bucket: int
    reasons: tuple[str, ...]


WAITING = "a writer waits until they are compacted (visibility-callback.enabled)"
PURGE = ("files to purge of deleted rows (their deletion vector hides more than "
         "compaction.delete-ratio-threshold of their rows, or they are small)")


def breaches(health: pa.Table, policy: MaintenancePolicy, *, writers_wait: bool = False,
             level0_invisible: bool = False) -> list[Breach]:
    """Buckets whose small files, sorted runs or size amplification exceed the policy, or (append
    tables with deletion vectors) with files a compaction rewrites because of their vector: Paimon's
    own trigger (`append_vectors.files_to_purge`), so any one is a breach.

    Sorted runs are what Paimon's ``num-sorted-run.compaction-trigger`` bounds: every level-0 file
    is one run, every non-empty higher level another. Files waiting in ``bucket-postpone`` (bucket
    -2 of a postpone-bucket table) are backlog whatever their size: readers do not see their rows
    until the postpone compaction moves them, so they count against ``small_file_threshold``.

    ``writers_wait`` (the table's ``visibility-callback.enabled``, `table_waits_for_visibility`):
    batch writers block after their commits until a compaction has made their rows visible, so
    every postponed file, and with ``level0_invisible`` (deletion vectors) every level-0 file, is a
    breach at once: under the threshold the writer would wait in vain until its timeout."""
    out = []
    for row in health.to_pylist():
        reasons = []
        if row["bucket"] == POSTPONE_BUCKET:
            if row["file_count"] > policy.small_file_threshold:
                out.append(Breach(row["partition"], row["bucket"], (
                    f"{row['file_count']} postponed files > {policy.small_file_threshold}",)))
            elif writers_wait and row["file_count"] > 0:
                reason = f"{row['file_count']} postponed files: {WAITING}"
                out.append(Breach(row["partition"], row["bucket"], (reason,)))
            continue
        # (the LSM numbers are None on row-tracking tables, which have no levels: no breach of them)
        if writers_wait and level0_invisible and (row["level0_file_count"] or 0) > 0:
            reasons.append(f"{row['level0_file_count']} level-0 files: {WAITING}")
        if row["small_file_count"] > policy.small_file_threshold:
            reasons.append(f"{row['small_file_count']} small files > {policy.small_file_threshold}")
        if row.get("vector_purge_files"):
            reasons.append(f"{row['vector_purge_files']} {PURGE}")
        if row["sorted_runs"] is not None and row["sorted_runs"] > policy.level0_runs:
            reasons.append(f"{row['sorted_runs']} sorted runs > {policy.level0_runs}")
        amplification = row["size_amplification_percent"]
        if amplification is not None and amplification > policy.size_amplification_percent:
            reasons.append(f"size amplification {row['size_amplification_percent']:.0f}% > "
                           f"{policy.size_amplification_percent:.0f}%")
        if reasons:
            out.append(Breach(row["partition"], row["bucket"], tuple(reasons)))
    return out


def partitions_to_compact(health: pa.Table, policy: MaintenancePolicy, *, writers_wait: bool = False,
                          level0_invisible: bool = False) -> list[str]:
    """Sorted partition paths (``dt=2024-01-01``) with at least one breaching bucket (`breaches`)."""
    return sorted({b.partition for b in breaches(health, policy, writers_wait=writers_wait,
                                                 level0_invisible=level0_invisible)})


def planned_partitions(health: pa.Table) -> set[str]:
    """Partitions with a bucket whose compaction would rewrite something (``compaction_would_trigger``).
    A data-evolution table's compaction has no full mode (HEAD's planner): a breaching partition
    outside this set would get a run that changes nothing (e.g. its small row-id ranges are too
    few, or apart, for ``compaction.min.file-num``)."""
    return {r["partition"] for r in health.select(["partition", "compaction_would_trigger"]).to_pylist()
            if r["compaction_would_trigger"]}


def waiting_flags(store: FileStore) -> dict[str, bool]:
    """`breaches`' keyword arguments for a table: whether its writers wait for a compaction, and
    whether its level-0 files are invisible (deletion vectors)."""
    return {"writers_wait": table_waits_for_visibility(store), "level0_invisible": deletion_vectors_enabled(store)}


def partition_values(partition_path: str) -> dict[str, str]:
    """``dt=2024-01-01/region=eu`` → ``{"dt": "2024-01-01", "region": "eu"}`` (unescaped)."""
    out = {}
    for part in filter(None, partition_path.split("/")):
        key, _, value = part.partition("=")
        out[unquote(key)] = unquote(value)
    return out


def max_of(health: pa.Table, column: str) -> float:
    """The largest value of a health column (0 for an empty table; nulls ignored)."""
    values = [v for v in health.column(column).to_pylist() if v is not None]
    return max(values, default=0)


def needs_full(health: pa.Table, policy: MaintenancePolicy, postpone: bool = False) -> bool:
    """Whether a breach is one universal compaction would not pick (small files, typically): then
    only a full compaction of the partition fixes it. Postponed files never need one: the postpone
    compaction moves them all. In a postpone-bucket table (``postpone``) that compaction runs
    universal compaction only on the real buckets holding level-0 files (as Paimon's), so a
    breaching real bucket without level-0 files needs a full one too (`compact_postpone` with
    ``full``); asking for less would request a compaction that changes nothing there."""
    def fixed_without_full(r: dict[str, Any]) -> bool:
        return bool(r["compaction_would_trigger"]) and (not postpone or (r["level0_file_count"] or 0) > 0)

    fixed = {(r["partition"], r["bucket"]): fixed_without_full(r) for r in health.to_pylist()}
    return any(not fixed[(b.partition, b.bucket)] for b in breaches(health, policy) if b.bucket != POSTPONE_BUCKET)


def postponed_files(health: pa.Table) -> int:
    """Files waiting in ``bucket-postpone`` (0 but in postpone-bucket tables)."""
    return sum(r["file_count"] for r in health.select(["bucket", "file_count"]).to_pylist()
               if r["bucket"] == POSTPONE_BUCKET)


def vector_purge_files(health: pa.Table) -> int:
    """Files a compaction rewrites because of their deletion vector (append tables; see `breaches`)."""
    if "vector_purge_files" not in health.column_names:
        return 0
    return sum(v or 0 for v in health.column("vector_purge_files").to_pylist())


def max_small_files(health: pa.Table) -> int:
    """The most small files of one bucket, every postponed file counted as one (see `breaches`)."""
    return max((r["file_count"] if r["bucket"] == POSTPONE_BUCKET else r["small_file_count"]
                for r in health.select(["bucket", "file_count", "small_file_count"]).to_pylist()), default=0)

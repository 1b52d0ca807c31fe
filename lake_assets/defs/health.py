"""Pure evaluation of `Table.health()` rows against a table's maintenance policy."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa

from lake_assets.defs.config import MaintenancePolicy


@dataclass(frozen=True)
class Breach:
    """A (partition, bucket) over one or more of the policy's thresholds."""

    partition: str
    bucket: int
    reasons: tuple[str, ...]


def breaches(health: pa.Table, policy: MaintenancePolicy) -> list[Breach]:
    """Buckets whose small files, level-0 files or size amplification exceed the policy."""
    out = []
    for row in health.to_pylist():
        reasons = []
        if row["small_file_count"] > policy.small_file_threshold:
            reasons.append(f"{row['small_file_count']} small files > {policy.small_file_threshold}")
        if row["level0_file_count"] > policy.level0_runs:
            reasons.append(f"{row['level0_file_count']} level-0 runs > {policy.level0_runs}")
        if row["size_amplification_percent"] > policy.size_amplification_percent:
            reasons.append(f"size amplification {row['size_amplification_percent']:.0f}% > "
                           f"{policy.size_amplification_percent:.0f}%")
        if reasons:
            out.append(Breach(row["partition"], row["bucket"], tuple(reasons)))
    return out


def partitions_to_compact(health: pa.Table, policy: MaintenancePolicy) -> list[str]:
    """Sorted partition paths (``dt=2024-01-01``) with at least one breaching bucket."""
    return sorted({b.partition for b in breaches(health, policy)})


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

"""Which snapshots (or long-lived changelogs) expire: the pure planner, and what an expiration reports.

`plan_expire` decides from ids, commit times and retention settings alone (no I/O); the deleting
code in `lake_assets.ops.expire` and `lake_assets.ops.expire_changelog` acts on its plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExpirePlan:
    """Snapshots ``[begin, end)`` expire; ``end`` becomes the earliest."""

    begin: int
    end: int

    @property
    def snapshot_ids(self) -> range:
        return range(self.begin, self.end)

    def __bool__(self) -> bool:
        return self.end > self.begin


def plan_expire(
    *,
    earliest: int,
    latest: int,
    retain_min: int,
    retain_max: int,
    expire_limit: int,
    older_than_ms: int,
    time_of: dict[int, int] | None = None,
    consumer_min: int | None = None,
    protected_min: int | None = None,
    own_time: bool = False,
) -> ExpirePlan:
    """Which snapshots (or changelogs) expire (pure). ``time_of`` maps id → commit time for the time rule.

    A snapshot ``id`` may only expire when the one after it was committed before ``older_than_ms``
    (so that every snapshot newer than the cut-off stays reachable by time travel). With
    ``own_time`` (changelogs, as Paimon) an id's own commit time decides. Ids below
    ``latest - retain_max + 1`` go regardless of time; ``protected_min`` and ``consumer_min`` cap the range.
    """
    lo = max(latest - retain_max + 1, earliest)
    hi = latest - retain_min + 1
    if consumer_min is not None:
        hi = min(hi, consumer_min)
    if protected_min is not None:
        hi = min(hi, protected_min)
    hi = min(hi, earliest + expire_limit)
    end = hi
    # snapshots below `lo` are beyond retain_max: they go regardless of time
    for sid in range(max(lo, earliest), hi):
        t = (time_of or {}).get(sid if own_time else sid + 1)
        if t is None or t >= older_than_ms:
            end = sid
            break
    end = max(end, min(lo, hi))
    return ExpirePlan(earliest, max(end, earliest))


@dataclass
class ExpireResult:
    """What an expiration removed (or would remove, for a dry run)."""

    expired_snapshots: list[int] = field(default_factory=list)
    long_lived_changelogs: list[int] = field(default_factory=list)
    expired_changelogs: list[int] = field(default_factory=list)
    deleted_data_files: list[str] = field(default_factory=list)
    deleted_changelog_files: list[str] = field(default_factory=list)
    deleted_manifests: list[str] = field(default_factory=list)
    deleted_index_files: list[str] = field(default_factory=list)
    deleted_statistics_files: list[str] = field(default_factory=list)
    earliest: int | None = None
    dry_run: bool = False
    deletion_started: bool = False  # whether a failure may have left snapshots without files

    def summary(self) -> dict[str, object]:
        return {
            "expired_snapshots": len(self.expired_snapshots),
            "first_expired": self.expired_snapshots[0] if self.expired_snapshots else None,
            "last_expired": self.expired_snapshots[-1] if self.expired_snapshots else None,
            "long_lived_changelogs": len(self.long_lived_changelogs),
            "expired_changelogs": len(self.expired_changelogs),
            "deleted_data_files": len(self.deleted_data_files),
            "deleted_changelog_files": len(self.deleted_changelog_files),
            "deleted_manifests": len(self.deleted_manifests),
            "deleted_index_files": len(self.deleted_index_files),
            "deleted_statistics_files": len(self.deleted_statistics_files),
            "earliest": self.earliest,
            "dry_run": self.dry_run,
        }

"""The retention and lifecycle options of `CoreOptions`: what expiry, consumers, partition expiry
and automatic tags read.

``snapshot.*`` retention and the ``changelog.*`` retention that falls back to it, empty-directory
cleaning, ``consumer.expiration-time``, ``partition.expiration-*`` and ``tag.*``. Typed accessors
over the registry rows (`lake_assets.option_rules`), as `lake_assets.option_merge.MergeOptions` is
for the merge options.
"""

from __future__ import annotations

from dataclasses import dataclass

from lake_assets.option_access import OptionAccess


@dataclass(frozen=True)
class LifecycleOptions(OptionAccess):
    """The options that decide how long snapshots, changelogs, consumers, partitions and tags live."""

    # ---- retention
    @property
    def snapshot_num_retained_min(self) -> int:
        return self._int("snapshot.num-retained.min", 10)

    @property
    def snapshot_num_retained_max(self) -> int:
        return self._int("snapshot.num-retained.max", 2**31 - 1)

    @property
    def snapshot_time_retained_ms(self) -> int:
        return self._duration("snapshot.time-retained", 3_600_000)

    @property
    def snapshot_expire_limit(self) -> int:
        return self._int("snapshot.expire.limit", 50)

    def changelog_retention(
        self, *, retain_min: int | None = None, retain_max: int | None = None, time_retained_ms: int | None = None
    ) -> tuple[int, int, int]:
        """``changelog.num-retained.min/max`` and ``changelog.time-retained``; each unset one falls back
        to the snapshot setting (given, or the table's ``snapshot.*`` option), as in Paimon."""
        smin = self.snapshot_num_retained_min if retain_min is None else retain_min
        smax = self.snapshot_num_retained_max if retain_max is None else retain_max
        stime = self.snapshot_time_retained_ms if time_retained_ms is None else time_retained_ms
        return (
            self._int("changelog.num-retained.min", smin),
            self._int("changelog.num-retained.max", smax),
            self._duration("changelog.time-retained", stime),
        )

    def changelog_decoupled(
        self, *, retain_min: int | None = None, retain_max: int | None = None, time_retained_ms: int | None = None
    ) -> bool:
        """Whether changelogs outlive snapshots: any changelog retention setting exceeds the snapshot one."""
        smin = self.snapshot_num_retained_min if retain_min is None else retain_min
        smax = self.snapshot_num_retained_max if retain_max is None else retain_max
        stime = self.snapshot_time_retained_ms if time_retained_ms is None else time_retained_ms
        cmin, cmax, ctime = self.changelog_retention(retain_min=smin, retain_max=smax, time_retained_ms=stime)
        return cmin > smin or cmax > smax or ctime > stime

    @property
    def clean_empty_directories(self) -> bool:
        return self._bool("snapshot.clean-empty-directories", False)

    @property
    def consumer_expiration_ms(self) -> int | None:
        return self._typed("consumer.expiration-time", None)  # type: ignore[return-value]

    # ---- lifecycle
    @property
    def partition_expiration_time_ms(self) -> int | None:
        return self._typed("partition.expiration-time", None)  # type: ignore[return-value]

    @property
    def partition_expiration_check_interval_ms(self) -> int:
        return self._duration("partition.expiration-check-interval", 3_600_000)

    @property
    def partition_expiration_strategy(self) -> str:
        return self._typed("partition.expiration-strategy", "values-time")  # type: ignore[return-value]

    @property
    def partition_expiration_max_num(self) -> int:
        return self._int("partition.expiration-max-num", 100)

    @property
    def tag_automatic_creation(self) -> str:
        return self._typed("tag.automatic-creation", "none")  # type: ignore[return-value]

    @property
    def tag_creation_period(self) -> str:
        return self._typed("tag.creation-period", "daily")  # type: ignore[return-value]

    @property
    def tag_creation_delay_ms(self) -> int:
        return self._duration("tag.creation-delay", 0)

    @property
    def tag_period_formatter(self) -> str:
        return self._typed("tag.period-formatter", "with_dashes")  # type: ignore[return-value]

    @property
    def tag_num_retained_max(self) -> int | None:
        return self._typed("tag.num-retained-max", None)  # type: ignore[return-value]

    @property
    def tag_default_time_retained_ms(self) -> int | None:
        return self._typed("tag.default-time-retained", None)  # type: ignore[return-value]

    @property
    def tag_automatic_completion(self) -> bool:
        return self._bool("tag.automatic-completion", False)

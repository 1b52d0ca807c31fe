"""Automatic tags at commit time (Paimon's ``TagAutoManager``: ``TagAutoCreation`` + ``TagTimeExpire``).

With ``tag.automatic-creation`` = ``process-time`` (the snapshot's commit time on the local clock)
or ``watermark`` (the snapshot's watermark, UTC), every commit checks whether a period of
``tag.creation-period`` (daily, hourly, two-hours) has completed, ``tag.creation-delay`` included,
and tags the new snapshot with the completed period's name: ``2024-01-01`` (daily) or
``2024-01-01 10`` (hourly), without dashes under ``tag.period-formatter`` = ``without_dashes``.
As in Paimon the next period to tag follows the newest automatic tag, periods missed while nothing
was committed are skipped (unless ``tag.automatic-completion``), and ``tag.num-retained-max``
deletes the oldest automatic tags (manual tags are never counted or deleted). Tags get
``tag.default-time-retained``; a tag whose retention has passed is deleted after a commit
(``TagTimeExpire``). Deleted tags' files become orphans for `remove_orphan_files`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.errors import AlreadyExistsError, SnapshotNotFoundError
from lake_assets.ops.tagging import create_tag
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

MODES = ("none", "process-time", "watermark", "batch")
PERIODS = {"daily": dt.timedelta(days=1), "hourly": dt.timedelta(hours=1), "two-hours": dt.timedelta(hours=2)}
_FORMATS = {
    ("daily", "with_dashes"): "%Y-%m-%d",
    ("daily", "without_dashes"): "%Y%m%d",
    ("hourly", "with_dashes"): "%Y-%m-%d %H",
    ("hourly", "without_dashes"): "%Y%m%d %H",
}
_EPOCH = dt.datetime(1970, 1, 1)


def check_mode(value: object) -> str | None:
    """Option-rule check of ``tag.automatic-creation``."""
    if value == "batch":
        return "batch tag creation is not supported (use process-time or watermark)"
    return None


@dataclass(frozen=True)
class PeriodHandler:
    """Names and times of one ``tag.creation-period`` (Paimon's ``TagPeriodHandler``)."""

    period: str
    formatter: str = "with_dashes"

    @property
    def one_period(self) -> dt.timedelta:
        return PERIODS[self.period]

    @property
    def _fmt(self) -> str:
        return _FORMATS[("daily" if self.period == "daily" else "hourly", self.formatter)]

    def tag_name(self, time: dt.datetime) -> str:
        return time.strftime(self._fmt)

    def tag_time(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for; None when it is not an automatic tag's name."""
        try:
            t = dt.datetime.strptime(name, self._fmt)
        except ValueError:
            return None
        return t if t.strftime(self._fmt) == name else None

    def previous_period(self, time: dt.datetime) -> dt.datetime:
        """The start of the last period completed at ``time`` (aligned on the epoch, local clock)."""
        step = self.one_period
        start = _EPOCH + ((time - _EPOCH) // step) * step
        return start - step


def _snapshot_time(mode: str, snap: Snapshot) -> dt.datetime | None:
    if mode == "process-time":
        return dt.datetime.fromtimestamp(snap.time_millis / 1000)  # local wall clock, as Java's systemDefault
    if snap.watermark is None or snap.watermark < 0:
        return None  # no watermark yet (Long.MIN_VALUE): nothing to tag
    return dt.datetime.fromtimestamp(snap.watermark / 1000, dt.UTC).replace(tzinfo=None)


def _local_create_time(parts: list[int] | None) -> dt.datetime | None:
    if not parts or len(parts) < 3:
        return None
    p = list(parts) + [0] * (7 - len(parts))
    return dt.datetime(p[0], p[1], p[2], p[3], p[4], p[5], p[6] // 1000)


def run_tag_automation(store: FileStore, snap: Snapshot, *, now: dt.datetime | None = None) -> list[str]:
    """After ``snap`` was committed: create the due automatic tag, then drop tags past their
    retention or beyond ``tag.num-retained-max``. Returns the names of tags created."""
    opts = store.schema.core_options
    created: list[str] = []
    mode = opts.tag_automatic_creation
    tags = store.tag_manager()
    if mode != "none":
        handler = PeriodHandler(opts.tag_creation_period, opts.tag_period_formatter)
        time = _snapshot_time(mode, snap)
        all_tags = tags.tags()
        auto = {n: t for n, t in all_tags.items() if handler.tag_time(n) is not None}
        if time is not None:
            next_tag = None
            if auto:
                next_tag = max(handler.tag_time(n) for n in auto) + handler.one_period  # type: ignore[operator]
            delay = dt.timedelta(milliseconds=opts.tag_creation_delay_ms)
            if next_tag is None or time - delay >= next_tag + handler.one_period:
                this_tag = handler.previous_period(time - delay) if next_tag is None or not (
                    opts.tag_automatic_completion) else next_tag
                name = handler.tag_name(this_tag)
                if name not in all_tags:
                    retained = opts.tag_default_time_retained_ms
                    try:
                        store.require(Op.TAG)
                        create_tag(store, name, store.snapshot_manager.snapshot(snap.id),
                                   None if retained is None else dt.timedelta(milliseconds=retained).total_seconds())
                        created.append(name)
                        auto[name] = tags.get(name)
                    except (AlreadyExistsError, SnapshotNotFoundError) as exc:
                        # another committer tagged the period, or expiry took the snapshot: next commit
                        log.info("Automatic tag %s of %s not created: %s", name, store.name, exc)
        keep = opts.tag_num_retained_max
        if keep is not None and len(auto) > keep:
            oldest = sorted(auto.items(), key=lambda kv: (kv[1].snapshot.id, kv[0]))
            for name, _ in oldest[: len(auto) - keep]:
                _delete_quietly(store, name)
    expire_tags(store, now=now)
    return created


def expire_tags(store: FileStore, *, now: dt.datetime | None = None) -> list[str]:
    """Delete tags whose ``tagTimeRetained`` has passed since their creation (Paimon's TagTimeExpire).

    Tags without a creation time or retention (manual tags, tags of older writers) are kept."""
    now = now or dt.datetime.now()
    gone = []
    for name, tag in store.tag_manager().tags().items():
        created = _local_create_time(tag.create_time)
        if created is None or tag.time_retained_s is None:
            continue
        if created + dt.timedelta(seconds=tag.time_retained_s) < now:
            _delete_quietly(store, name)
            gone.append(name)
    return gone


def _delete_quietly(store: FileStore, name: str) -> None:
    with contextlib.suppress(SnapshotNotFoundError):  # deleted meanwhile by another committer
        store.require(Op.TAG)
        store.tag_manager().delete(name)

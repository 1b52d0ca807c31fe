"""Automatic tags at commit time (Paimon's ``TagAutoManager``: ``TagAutoCreation`` + ``TagTimeExpire``).

With ``tag.automatic-creation`` = ``process-time`` (the snapshot's commit time on the local clock)
or ``watermark`` (the snapshot's watermark, UTC), every commit looks at the snapshots since the
newest automatic tag (none yet: from the earliest) in order; a snapshot whose time completes the
next period of ``tag.creation-period`` (daily, hourly, two-hours), ``tag.creation-delay`` included,
is tagged with the name of the period before its time: ``2024-01-01`` (daily) or
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
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.errors import AlreadyExistsError, InvalidArgumentError, SnapshotNotFoundError
from lake_assets.ops.tag_deletion import delete_tag
from lake_assets.ops.tag_retention import local_create_time as _local_create_time
from lake_assets.ops.tagging import create_tag
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.snapshot_identity import discarded_by_rollback
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


# Per table location in this process: (the settings and last automatic tag, last snapshot
# examined). Whether a snapshot's tag is due depends on its time and on these only: with the same
# ones the snapshots examined need not be read again (Java's committer keeps this in memory too).
_examined: dict[str, tuple[tuple[object, ...], int]] = {}
_examined_lock = threading.Lock()


def run_tag_automation(store: FileStore, snap: Snapshot, *, now: dt.datetime | None = None) -> list[str]:
    """After ``snap`` was committed: create the due automatic tags, then drop tags past their
    retention. Returns the names of tags created.

    As Paimon's ``TagAutoCreation``: every snapshot from the one after the newest automatic tag
    (without automatic tags: the earliest) up to ``snap`` is looked at in order, and a snapshot whose
    time completes the next period (``tag.creation-delay`` included) is tagged with the last
    period completed at its time; ``tag.num-retained-max`` then deletes the oldest automatic tags."""
    opts = store.schema.core_options
    created: list[str] = []
    if opts.tag_automatic_creation != "none":
        created = _create_due_tags(store, snap)
    expire_tags(store, now=now)
    return created


def _create_due_tags(store: FileStore, snap: Snapshot) -> list[str]:
    opts = store.schema.core_options
    mode = opts.tag_automatic_creation
    handler = PeriodHandler(opts.tag_creation_period, opts.tag_period_formatter)
    delay = dt.timedelta(milliseconds=opts.tag_creation_delay_ms)
    retained = opts.tag_default_time_retained_ms
    all_tags = store.tag_manager().tags()
    auto = {n: t for n, t in all_tags.items() if handler.tag_time(n) is not None}
    # the newest tags of a history a rollback discarded (Java's rollback cut short) are no
    # position in this one: periods continue from the newest tag of this history
    for name in sorted(auto, key=lambda n: (auto[n].snapshot.id, n), reverse=True):
        if not discarded_by_rollback(store, auto[name].snapshot):
            break
        del auto[name]
    last_auto: str | None = None
    next_tag: dt.datetime | None = None
    if auto:
        last_auto = max(auto, key=lambda n: (auto[n].snapshot.id, n))  # Java: the newest by snapshot
        last_time = handler.tag_time(last_auto)
        assert last_time is not None  # an automatic tag's name is a period's time
        next_tag = last_time + handler.one_period
        sid = auto[last_auto].snapshot.id + 1
    else:
        sid = store.snapshot_manager.earliest_id() or snap.id
    key = store.paths.meta_root  # per branch: each has its own snapshots

    def state() -> tuple[object, ...]:
        return (mode, handler, delay, opts.tag_automatic_completion, last_auto)

    with _examined_lock:
        seen = _examined.get(key)
    if seen is not None and seen[0] == state():
        sid = max(sid, seen[1] + 1)
    created: list[str] = []
    while sid <= snap.id:
        current = snap if sid == snap.id else store.snapshot_manager.try_snapshot(sid)
        if current is None:  # expired meanwhile: continue from the earliest, as Java does
            earliest = store.snapshot_manager.earliest_id()
            if earliest is None or earliest <= sid:
                break
            sid = earliest
            continue
        time = _snapshot_time(mode, current)
        if time is not None and (next_tag is None or time - delay >= next_tag + handler.one_period):
            this_tag = next_tag if opts.tag_automatic_completion and next_tag is not None else (
                handler.previous_period(time))  # the period before the snapshot's time (delay aside)
            name = handler.tag_name(this_tag)
            held = all_tags.get(name)
            if held is not None and discarded_by_rollback(store, held.snapshot):
                # the period's tag of a history a rollback discarded, which the rollback should
                # have removed (Java's cut short): this history's snapshot takes the name
                with contextlib.suppress(SnapshotNotFoundError):
                    store.tag_manager().delete(name)
                del all_tags[name]
            if name not in all_tags:
                try:
                    store.require(Op.TAG)
                    # the stored snapshot (``snap`` may be the caller's copy)
                    stored = store.snapshot_manager.try_snapshot(current.id)
                    all_tags[name] = create_tag(store, name, stored, None if retained is None else retained / 1000)
                    created.append(name)
                except (AlreadyExistsError, SnapshotNotFoundError) as exc:
                    # another committer tagged the period, or expiry took the snapshot
                    log.info("Automatic tag %s of %s not created: %s", name, store.name, exc)
                    all_tags = store.tag_manager().tags()
            if name in all_tags:
                auto[name] = all_tags[name]
                last_auto = name
            next_tag = this_tag + handler.one_period
            _trim(store, auto, opts.tag_num_retained_max)
        sid += 1
    with _examined_lock:
        _examined[key] = (state(), snap.id)
    return created


def _trim(store: FileStore, auto: dict[str, Tag], keep: int | None) -> None:
    """``tag.num-retained-max``: delete the oldest automatic tags (by snapshot) beyond ``keep``."""
    if keep is None or len(auto) <= keep:
        return
    oldest = sorted(auto, key=lambda n: (auto[n].snapshot.id, n))
    for name in oldest[: len(auto) - keep]:
        _delete_quietly(store, name)
        del auto[name]


def expire_tags(store: FileStore, *, now: dt.datetime | None = None) -> list[str]:
    """Delete tags whose ``tagTimeRetained`` has passed since their creation (Paimon's TagTimeExpire).

    Tags without a creation time or retention (manual tags, tags of older writers) are kept."""
    now = now or dt.datetime.now()
    gone = []
    for name, tag in store.tag_manager().tags().items():
        created = _local_create_time(tag.create_time)
        if created is None or tag.time_retained_s is None:
            continue
        if created + dt.timedelta(seconds=tag.time_retained_s) < now and _delete_quietly(store, name):
            gone.append(name)
    return gone


def _delete_quietly(store: FileStore, name: str) -> bool:
    """Delete an automatic or expired tag; False when it stays: the tag a branch was created from
    (`delete_tag` refuses it: Paimon's expiry keeps the branch's files only through it; Paimon's
    tag expiry would delete it) is kept, with a warning, and the other tags still expire."""
    with contextlib.suppress(SnapshotNotFoundError):  # deleted meanwhile by another committer
        store.require(Op.TAG)
        try:
            delete_tag(store, name)  # as Paimon's TagTimeExpire: the files only the tag kept go too
        except InvalidArgumentError as exc:
            log.warning("Tag %r of %s is past its retention but kept: %s", name, store.name, exc)
            return False
    return True

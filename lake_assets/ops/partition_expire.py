"""Partition expiration (Paimon's ``PartitionExpire`` and the ``expire_partitions`` procedure).

A partition expires when its time is older than ``partition.expiration-time``. Its time is, per
``partition.expiration-strategy``:

- ``values-time`` (default): read from the partition values as Java's ``toString`` spells them
  (whatever ``partition.legacy-name`` says: a DATE value is its epoch day, so a DATE partition never
  expires this way; a TIMESTAMP is ``2024-01-05T01:02[:03]``). ``partition.timestamp-pattern``
  builds a text from them (``$dt $hour:00:00``; unset: the first partition value) and
  ``partition.timestamp-formatter`` (a Java ``DateTimeFormatter`` pattern such as ``yyyyMMdd``;
  unset: ``yyyy-MM-dd`` with an optional ``HH:mm:ss[.fff]``) parses it;
- ``update-time``: the creation time of the partition's newest live file.

Expired partitions are dropped as Paimon drops them: one OVERWRITE snapshot that deletes every
live file of those partitions (their files stay until snapshot expiry and orphan removal, so
time travel to earlier snapshots keeps working). Partitions whose values do not parse are kept
and reported (Paimon logs and skips them). At most ``partition.expiration-max-num`` partitions go
per run. Times compare on the writer's local wall clock, as Paimon's ``LocalDateTime`` does.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lake_assets.errors import InvalidArgumentError, OptionError
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.overwrite import Overwrite
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.partition_text import java_value_text
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from lake_assets.store.read_once import reads_once

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

STRATEGIES = ("values-time", "update-time")
DEFAULT_MAX_NUM = 100
DEFAULT_CHECK_INTERVAL_MS = 3_600_000

# Java DateTimeFormatter letters we translate to strptime directives (longest first).
_JAVA_TOKENS = [("yyyy", "%Y"), ("uuuu", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                ("ss", "%S"), ("SSSSSS", "%f"), ("SSS", "%f")]
# Java's PartitionTimeExtractor.TIMESTAMP_FORMATTER / DATE_FORMATTER: a space before the time, whose
# seconds are required (Timestamp.toString's 2024-01-05T01:02 is no time there)
_DEFAULT_TS = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?$")


def java_formatter_to_strptime(pattern: str, key: str = "partition.timestamp-formatter") -> str:
    """Translate a Java ``DateTimeFormatter`` pattern of date/time fields into a strptime format.

    Letters other than y/u M d H m s S (and quoted text) raise `OptionError` naming ``key``:
    a pattern we would parse differently from Java must not silently expire other partitions.
    """
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise OptionError(f"Option {key!r}: {pattern!r} has an unclosed quote")
            out.append(pattern[i + 1:j].replace("%", "%%") or "'")
            i = j + 1
            continue
        for token, directive in _JAVA_TOKENS:
            if pattern.startswith(token, i):
                out.append(directive)
                i += len(token)
                break
        else:
            ch = pattern[i]
            if ch.isalpha():
                raise OptionError(
                    f"Option {key!r}: {pattern!r} uses pattern letter {ch!r}; supported are "
                    "yyyy, MM, dd, HH, mm, ss, SSS (e.g. 'yyyyMMdd', 'yyyy-MM-dd HH:mm:ss')")
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)


def check_formatter(value: object) -> str | None:
    """Option-rule check of ``partition.timestamp-formatter`` (a problem text, or None)."""
    try:
        java_formatter_to_strptime(str(value))
    except OptionError as exc:
        return str(exc).split(": ", 2)[-1]
    return None


@dataclass(frozen=True)
class PartitionTimeExtractor:
    """The time of a partition from its values (Paimon's ``PartitionTimeExtractor``)."""

    pattern: str | None = None
    formatter: str | None = None

    def extract(self, keys: tuple[str, ...], values: tuple[Any, ...]) -> dt.datetime:
        """The partition's local date-time; ValueError when the values do not form one."""
        if self.pattern is None:
            text = str(values[0])
        else:
            text = self.pattern
            # in key order, as Paimon replaces them
            for k, v in zip(keys, values, strict=True):
                text = text.replace("$" + k, "" if v is None else str(v))
        if self.formatter is None:
            m = _DEFAULT_TS.match(text)
            if not m:
                raise ValueError(f"{text!r} is not yyyy-MM-dd[ HH:mm:ss]")
            parts = [int(p) if p else 0 for p in m.groups()[:6]]
            return dt.datetime(*parts)  # type: ignore[arg-type]
        return dt.datetime.strptime(text, java_formatter_to_strptime(self.formatter))


@dataclass
class PartitionExpireResult:
    """What one run expired (or would, with ``dry_run``)."""

    expired: list[dict[str, object]] = field(default_factory=list)
    unparseable: list[dict[str, object]] = field(default_factory=list)
    snapshot_id: int | None = None
    dry_run: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"expired_partitions": self.expired, "unparseable_partitions": self.unparseable,
                "snapshot_id": self.snapshot_id, "dry_run": self.dry_run}


def _local_now() -> dt.datetime:
    return dt.datetime.now()


def _from_local_ms(ms: int) -> dt.datetime:
    # file creation times are the writer's local wall clock encoded as if UTC (see table_health)
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).replace(tzinfo=None)


@reads_once
def expire_partitions(
    store: FileStore,
    *,
    expiration_time: dt.timedelta | None = None,
    strategy: str | None = None,
    timestamp_pattern: str | None = None,
    timestamp_formatter: str | None = None,
    max_expires: int | None = None,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> PartitionExpireResult:
    """Drop the partitions older than the expiration time; arguments override the table's options.

    Raises `InvalidArgumentError` for an unpartitioned table or when no expiration time is set.
    """
    opts = store.schema.core_options
    keys = tuple(store.partition_keys)
    if not keys:
        raise InvalidArgumentError(f"Cannot expire partitions of {store.name}: the table is not partitioned")
    if expiration_time is None:
        ms = opts.partition_expiration_time_ms
        if ms is None:
            raise InvalidArgumentError(
                f"Cannot expire partitions of {store.name}: set option 'partition.expiration-time' "
                "or pass expiration_time")
        expiration_time = dt.timedelta(milliseconds=ms)
    strategy = (strategy or opts.partition_expiration_strategy).lower()
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(f"Unknown partition expiration strategy {strategy!r}; use one of {list(STRATEGIES)}")
    extractor = PartitionTimeExtractor(
        timestamp_pattern if timestamp_pattern is not None else opts.get("partition.timestamp-pattern"),
        timestamp_formatter if timestamp_formatter is not None else opts.get("partition.timestamp-formatter"),
    )
    if extractor.formatter is not None:
        java_formatter_to_strptime(extractor.formatter)
    limit = opts.partition_expiration_max_num if max_expires is None else max_expires
    if limit < 1:
        raise InvalidArgumentError(f"max_expires must be at least 1, got {limit}")
    result = PartitionExpireResult(dry_run=dry_run)
    snap = store.snapshot_manager.latest()
    if snap is None:
        return result
    cutoff = (now or _local_now()) - expiration_time
    scan = store.file_store_scan()
    newest_file: dict[bytes, int] = {}
    for e in scan.live_entries(snap):
        t = e.file.creation_time_ms if e.file.creation_time_ms is not None else 0
        newest_file[e.partition] = max(newest_file.get(e.partition, t), t)
    default_name = opts.partition_default_name
    types = store.schema.types(list(keys))
    candidates: list[tuple[dt.datetime, tuple[Any, ...]]] = []
    for part, newest in newest_file.items():
        values = scan.partition_values(part)
        spec = dict(zip(keys, values, strict=True))
        if strategy == "update-time":
            when = _from_local_ms(newest)
        else:
            if any(v is None or v == default_name for v in values):
                result.unparseable.append(spec)
                continue
            # Java's values-time reads the internal values' toString (PartitionExpireStrategy's
            # RowDataToObjectArrayConverter), whatever partition.legacy-name says: a DATE is its epoch
            # day (no time, so never expired), a TIMESTAMP 2024-01-05T01:02 (a formatter with 'T')
            texts = tuple(java_value_text(v, t) for v, t in zip(values, types, strict=True))
            try:
                when = extractor.extract(keys, texts)
            except ValueError as exc:
                log.warning("Partition %s of %s: cannot read a time from its values (%s); it is kept",
                            spec, store.name, exc)
                result.unparseable.append(spec)
                continue
        if when < cutoff:
            candidates.append((when, values))
    candidates.sort(key=lambda c: c[0])  # oldest first, so a capped run drops the oldest
    chosen = [values for _, values in candidates[:limit]]
    result.expired = [dict(zip(keys, v, strict=True)) for v in chosen]
    if dry_run or not chosen:
        return result
    doomed = {serialize_row(list(v), types) for v in chosen}

    def matcher(values: tuple[Any, ...]) -> bool:
        return serialize_row(list(values), types) in doomed

    user = f"expire-partitions-{time.time_ns()}"
    ids = TableCommitter(store, user).commit(
        [], BATCH_COMMIT_IDENTIFIER, overwrite=Overwrite(matcher), check_committed=False
    )
    result.snapshot_id = ids[-1] if ids else None
    return result


def partitions_past_expiration(store: FileStore, now: dt.datetime | None = None) -> int | None:
    """How many partitions are past ``partition.expiration-time`` now, by the table's own strategy,
    pattern and formatter (what `expire_partitions` would drop without ``partition.expiration-max-num``).

    None when the table is unpartitioned or sets no expiration time. Reads manifests only."""
    if not store.partition_keys or store.schema.core_options.partition_expiration_time_ms is None:
        return None
    # The cap of one expiry run does not bound what is past expiration: count them all.
    return len(expire_partitions(store, now=now, max_expires=sys.maxsize, dry_run=True).expired)


# Commit-time checks per table location in this process: when the interval started (Paimon keeps
# it per committer, starting when the committer is created).
_last_check: dict[str, float] = {}
_last_check_lock = threading.Lock()


def expire_partitions_after_commit(store: FileStore) -> PartitionExpireResult | None:
    """Commit-time expiration when ``partition.expiration-time`` is set, as Paimon's committer runs
    it: once ``partition.expiration-check-interval`` has passed since the interval started.

    Paimon's `PartitionExpire` starts the interval when its committer is created, so a one-off
    batch commit expires nothing unless the interval is zero; here the interval starts at the
    process's first commit to the table (a Spark job's one commit expires nothing, a long-lived
    writer expires once an interval). The expire_partitions procedure, job and asset expire at once.
    """
    opts = store.schema.core_options
    if opts.partition_expiration_time_ms is None or not store.partition_keys:
        return None
    interval_s = opts.partition_expiration_check_interval_ms / 1000
    key = store.paths.meta_root  # per branch: each commits on its own
    now = time.monotonic()
    with _last_check_lock:
        started = _last_check.setdefault(key, now)
        if interval_s > 0 and now - started <= interval_s:
            return None
        # recorded before expiring: the expiry's own commit must not expire again
        _last_check[key] = now
    return expire_partitions(store)


__all__ = [
    "PartitionExpireResult", "PartitionTimeExtractor", "expire_partitions", "expire_partitions_after_commit",
    "java_formatter_to_strptime", "partitions_past_expiration",
]

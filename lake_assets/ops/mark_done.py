"""Partition mark-done after a batch commit: the ``_SUCCESS`` file Paimon's Spark writes leave.

With ``partition.end-input-to-done = true`` Paimon's Spark writes (1.0+: ``WriteIntoPaimonTable``,
then ``WriteHelper.markDoneIfNeeded``; batch ``df.write``/``INSERT``, and each streaming
micro-batch) run the table's ``partition.mark-done-action`` for every partition their commit
messages name, right after the commit (docs/format.md §13.3). The default action, ``success-file``
(``SuccessFileMarkDoneAction``), writes ``<partition>/_SUCCESS``: ``SuccessFile`` JSON with a
creation and a modification time in epoch milliseconds; a file already there keeps its creation
time and gets the new modification time. Java's core ``BatchTableWrite`` never marks: only the
engines' sinks do, so lake_assets marks after its Spark writes (`lake_assets.spark.writer`,
``write_table_native``) and not after the core's ``write_arrow``.

The other actions need a metastore, an HTTP endpoint or a Java class: a table carrying them is
refused for writes (`lake_assets.option_rules_mark_done`), so only ``success-file`` runs here.

Unpartitioned tables are not marked: Flink's trigger skips them, and Java's Spark write fails
there after its commit (``new Path(table, "")``), which lake_assets does not copy. Marking happens
after the snapshot exists, so a failure to write a marker must not look like a failed write (a
caller retrying an append would write its rows twice): it is logged, named in the result, and the
write succeeds, as Paimon's Spark write treats its other post-commit report (``reportToHms``).
"""

from __future__ import annotations

import json
import logging
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.option_rules import rule_for
from lake_assets.option_types import parse_value
from lake_assets.paths import check_file_name
from lake_assets.spec.manifest import FileKind

if TYPE_CHECKING:
    from lake_assets.io.file_io import FileIO
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

SUCCESS_FILE_NAME = "_SUCCESS"  # SuccessFileMarkDoneAction.SUCCESS_FILE_NAME
END_INPUT_TO_DONE = "partition.end-input-to-done"


@dataclass(frozen=True)
class SuccessFile:
    """Paimon's ``SuccessFile``: when the partition was first and last marked done (epoch ms)."""

    creation_time: int
    modification_time: int

    def to_json(self) -> str:
        """The text Java writes (``JsonSerdeUtil.toJson``: Jackson's default pretty printer, the
        fields in declaration order), so a file we write is byte for byte one Java would write."""
        return (f'{{\n  "creationTime" : {self.creation_time},\n'
                f'  "modificationTime" : {self.modification_time}\n}}')

    @classmethod
    def from_json(cls, text: str, where: str) -> SuccessFile:
        """Parse a ``_SUCCESS`` file (unknown fields ignored, as ``@JsonIgnoreProperties``)."""
        try:
            obj = json.loads(text)
            times = [obj[name] for name in ("creationTime", "modificationTime")]
        except (ValueError, TypeError, KeyError) as exc:
            raise CorruptMetadataError(f"{where} is not a Paimon success file: {exc}") from None
        if not all(isinstance(t, int) and not isinstance(t, bool) for t in times):
            raise CorruptMetadataError(f"{where} is not a Paimon success file: times {times!r} are not integers")
        return cls(times[0], times[1])

    def touched(self, now_ms: int) -> SuccessFile:
        """``updateModificationTime``: the same creation time, a new modification time."""
        return SuccessFile(self.creation_time, now_ms)


@dataclass
class MarkDoneResult:
    """The partition directories (``k=v/...``) marked done, and those whose marker failed (with why)."""

    marked: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def end_input_to_done(store: FileStore) -> bool:
    """Whether the table asks writes to mark their partitions done at the end of their input."""
    text = store.schema.options.get(END_INPUT_TO_DONE)
    rule = rule_for(END_INPUT_TO_DONE)
    # a value that does not parse refuses writes before they start (table_support)
    return text is not None and rule is not None and parse_value(rule, text) is True


def touched_partitions(store: FileStore, messages: Iterable[CommitMessage]) -> list[str]:
    """The partition directories of ``messages``, each once, in order (``markDoneIfNeeded``:
    the commit messages' partitions, distinct); none for an unpartitioned table."""
    if not store.schema.partition_keys:
        return []
    return list(dict.fromkeys(store.partition_path_of(m.partition) for m in messages))


def success_file_path(store: FileStore, partition_dir: str) -> str:
    """``<table>/<partition>/_SUCCESS``, each directory level checked to be a plain name."""
    for part in partition_dir.split("/"):
        check_file_name(part, f"partition directory under {store.paths.root}")
    path = posixpath.join(store.paths.root, partition_dir, SUCCESS_FILE_NAME)
    store.paths.ensure_inside([path])
    return path


def mark_success_file(fio: FileIO, path: str, now_ms: int) -> SuccessFile:
    """``SuccessFileMarkDoneAction.markDone``: a new file with both times ``now_ms``, or the
    existing one with its modification time set to ``now_ms``; replaced atomically."""
    marker = SuccessFile(now_ms, now_ms)
    if fio.exists(path):
        marker = SuccessFile.from_json(fio.read_text(path), path).touched(now_ms)
    fio.overwrite_atomic(path, marker.to_json().encode("utf-8"))
    return marker


def mark_partitions_done(store: FileStore, partition_dirs: Iterable[str], *,
                         now_ms: int | None = None) -> MarkDoneResult:
    """Write the ``_SUCCESS`` marker of each partition directory; a failure is logged and named
    in the result, never raised (the commit before it landed)."""
    result = MarkDoneResult()
    for pdir in partition_dirs:
        at = int(time.time() * 1000) if now_ms is None else now_ms
        try:
            mark_success_file(store.file_io, success_file_path(store, pdir), at)
        except Exception as exc:  # the commit landed: a marker failure must not read as a failed write
            result.failed[pdir] = f"{type(exc).__name__}: {exc}"
            continue
        result.marked.append(pdir)
    if result.failed:
        log.warning("Committed to %s, but could not mark %d partition(s) done (partition.end-input-to-done): %s",
                    store.name, len(result.failed),
                    "; ".join(f"{p}: {why}" for p, why in result.failed.items()))
    return result


def mark_done_after_commit(store: FileStore, messages: Iterable[CommitMessage], *,
                           now_ms: int | None = None) -> MarkDoneResult:
    """After an engine write's commit landed: mark the partitions its messages touched done when
    the table carries ``partition.end-input-to-done = true`` (else do nothing)."""
    if not end_input_to_done(store):
        return MarkDoneResult()
    return mark_partitions_done(store, touched_partitions(store, messages), now_ms=now_ms)


def read_marker(store: FileStore, partition_dir: str) -> SuccessFile | None:
    """The ``_SUCCESS`` file of a partition directory, or None when there is none."""
    path = success_file_path(store, partition_dir)
    try:
        return SuccessFile.from_json(store.file_io.read_text(path), path)
    except FileNotFoundError:
        return None


def marker_report(store: FileStore, since_snapshot: int | None, since_ms: int) -> dict[str, list[str]]:
    """For a job's summary, when the table marks done: the partitions the snapshots after
    ``since_snapshot`` added files to, split into those marked at or after ``since_ms`` and those
    whose marker is missing or older (the write logged why). Empty when the option is off."""
    if not end_input_to_done(store) or not store.schema.partition_keys:
        return {}
    sm = store.snapshot_manager
    latest = sm.latest_id()
    scan = store.file_store_scan()
    partitions: dict[str, None] = {}
    for sid in range((since_snapshot or 0) + 1, (latest or 0) + 1):
        snap = sm.try_snapshot(sid)
        for e in scan.delta_entries(snap) if snap is not None else ():
            if e.kind == FileKind.ADD:
                partitions.setdefault(store.partition_path_of(e.partition), None)
    report: dict[str, list[str]] = {"marked_done": [], "mark_done_missing": []}
    for pdir in sorted(partitions):
        try:
            marker = read_marker(store, pdir)
        except Exception:  # a report: an unreadable marker counts as missing
            marker = None
        ok = marker is not None and marker.modification_time >= since_ms
        report["marked_done" if ok else "mark_done_missing"].append(pdir)
    return report


__all__ = [
    "END_INPUT_TO_DONE",
    "SUCCESS_FILE_NAME",
    "MarkDoneResult",
    "SuccessFile",
    "end_input_to_done",
    "mark_done_after_commit",
    "mark_partitions_done",
    "mark_success_file",
    "marker_report",
    "read_marker",
    "success_file_path",
    "touched_partitions",
]

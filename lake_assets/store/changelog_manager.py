"""Long-lived changelogs: ``changelog/changelog-<id>`` files that outlive their snapshots.

When the changelog lifecycle is decoupled (a ``changelog.*`` retention setting exceeds the snapshot
one), snapshot expiration first copies the snapshot JSON to ``changelog/changelog-<id>`` and keeps
the files a stream needs to read that snapshot's changes: its changelog manifests and files, or, for
``changelog-producer = none``, its base and delta lists and the data files writers added. Streaming
and incremental reads fall back to these files for ids whose snapshot is gone; `expire_changelogs`
removes them per the changelog retention.
"""

from __future__ import annotations

import contextlib
import re

from lake_assets.errors import SnapshotNotFoundError
from lake_assets.io.file_io import FileIO
from lake_assets.paths import TablePaths
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store import read_once
from lake_assets.store.snapshot_manager import SnapshotManager, read_snapshot_file

# fullmatch with ASCII digits: `$` accepts a final newline and `\\d` other scripts' digits
_CHANGELOG_NAME = re.compile(r"changelog-([0-9]+)")


class ChangelogManager:
    """Reads and writes the ``changelog/`` directory of one table, with its EARLIEST/LATEST hints."""

    def __init__(self, file_io: FileIO, paths: TablePaths, table_name: str = "table") -> None:
        self.file_io = file_io
        self.paths = paths
        self.table_name = table_name

    def ids(self) -> list[int]:
        """Ids of all long-lived changelogs, ascending (lists the directory)."""
        out = []
        for name in self.file_io.list_names(self.paths.changelog_dir):
            m = _CHANGELOG_NAME.fullmatch(name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def exists(self, snapshot_id: int) -> bool:
        return self.file_io.is_file(self.paths.changelog_file(snapshot_id))

    def read_hint(self, name: str) -> int | None:
        """The id in the changelog directory's ``EARLIEST`` or ``LATEST`` hint file, or None when the
        file is missing or not a number (a hint may lag: callers check the id exists)."""
        try:
            text = self.file_io.read_text(f"{self.paths.changelog_dir}/{name}")
        except FileNotFoundError:
            return None
        return int(text) if text.isdigit() else None

    def earliest_id(self) -> int | None:
        """Oldest long-lived changelog, or None when there is none."""
        hint = self.read_hint("EARLIEST")
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.ids()
        return ids[0] if ids else None

    def latest_id(self) -> int | None:
        """Newest long-lived changelog, or None when there is none."""
        hint = self.read_hint("LATEST")
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.ids()
        return ids[-1] if ids else None

    def changelog(self, snapshot_id: int) -> Snapshot:
        return read_snapshot_file(
            self.file_io, self.paths.changelog_file(snapshot_id), snapshot_id, f"changelog-{snapshot_id}",
            self.table_name, missing=f"Table {self.table_name} has no long-lived changelog {snapshot_id}",
        )

    def try_changelog(self, snapshot_id: int) -> Snapshot | None:
        try:
            return self.changelog(snapshot_id)
        except SnapshotNotFoundError:
            return None

    def write(self, snapshot: Snapshot) -> None:
        """Keep ``snapshot``'s JSON as a long-lived changelog (idempotent: a re-run rewrites the same bytes)."""
        self.file_io.overwrite_atomic(self.paths.changelog_file(snapshot.id), snapshot.to_json().encode())

    def delete(self, snapshot_id: int) -> None:
        """Delete ``changelog-<id>`` if it is there; this operation no longer remembers it."""
        path = self.paths.changelog_file(snapshot_id)
        self.file_io.discard(path)
        read_once.forget(self.file_io.protocol, path)

    def write_earliest_hint(self, snapshot_id: int) -> None:
        with contextlib.suppress(OSError):
            self.file_io.overwrite_atomic(f"{self.paths.changelog_dir}/EARLIEST", str(snapshot_id).encode())

    def write_latest_hint(self, snapshot_id: int) -> None:
        with contextlib.suppress(OSError):
            self.file_io.overwrite_atomic(f"{self.paths.changelog_dir}/LATEST", str(snapshot_id).encode())


def snapshot_or_changelog(
    snapshots: SnapshotManager, changelogs: ChangelogManager, snapshot_id: int
) -> Snapshot | None:
    """The snapshot ``snapshot_id``, or its long-lived changelog once the snapshot expired; None if neither."""
    snap = snapshots.try_snapshot(snapshot_id)
    return snap if snap is not None else changelogs.try_changelog(snapshot_id)


__all__ = ["ChangelogManager", "snapshot_or_changelog"]

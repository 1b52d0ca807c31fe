"""What a commit that will not land may delete: the files its messages' writers created, except
those a retained snapshot or tag references (messages handed to a fresh committer may be the very
ones a snapshot committed). Used by `TableCommitter.abort` and by a commit that finds its
messages' files were never committed.

A message's file names are plain names (validated), but the directories they sit in may be
symbolic links on a local disk: every delete here goes through `delete_inside`, which refuses
(`UnsafePathError`, nothing deleted) when a directory resolves out of the table, as expiry and
orphan removal do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import UnsafePathError
from lake_assets.spec.hash_index import HASH_INDEX

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)


def written_paths(store: FileStore, messages: Sequence[CommitMessage]) -> list[str]:
    """Files the messages' writers created (upgraded files are not theirs to delete), with the
    index files they wrote (a dynamic-bucket writer's HASH files, a compaction's deletion vectors)."""
    return [p for m in messages for f in m.all_written_files()
            for p in store.written_file_paths(m.partition, m.bucket, f)] + [
        store.paths.index_file(e.file_name) for m in messages for e in m.index_after
    ]


def delete_inside(store: FileStore, paths: Iterable[str]) -> None:
    """Delete ``paths``, all proven inside the table first (through symlinks on a local disk)."""
    store.file_io.delete_many(store.paths.ensure_inside(paths, resolve_links=store.file_io.has_symlinks))


def delete_unreferenced(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Delete the messages' files that no retained snapshot or tag references."""
    from lake_assets.ops.orphans import referenced_files  # orphans imports the scan stack

    files = written_paths(store, messages)
    live = referenced_files(store) if files else set()
    kept = [f for f in files if f in live]
    if kept:
        log.warning("Not deleting %d file(s) of %s that a snapshot or tag references, e.g. %s",
                    len(kept), store.name, kept[0])
    delete_inside(store, [f for f in files if f not in live])


def delete_compaction_outputs(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Delete what the messages' compactions wrote (their new files and changelog, not the
    upgraded files that keep their name, and their index files but the HASH files, which land
    with the data): for a commit whose data landed and whose COMPACT snapshot did not. A path
    that resolves out of the table is left (logged, nothing deleted): the commit landed and must
    report so."""
    try:
        _delete_compaction_outputs(store, messages)
    except UnsafePathError as exc:
        log.warning("Not deleting the outputs of a compaction of %s that did not land: %s", store.name, exc)


def _delete_compaction_outputs(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    delete_inside(store, [
        p
        for m in messages
        for f in (*m.compact_after, *m.compact_changelog)
        if f.file_name not in {b.file_name for b in m.compact_before}
        for p in store.written_file_paths(m.partition, m.bucket, f)
    ] + [
        store.paths.index_file(e.file_name) for m in messages for e in m.index_after
        if e.index_type != HASH_INDEX
    ])

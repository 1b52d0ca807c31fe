"""Which index manifests and index files (deletion vectors, hash indexes), and which statistics
files, an expiration deletes.

A snapshot's ``indexManifest`` names the complete set of its index files, and a commit that does
not change them carries the name forward; once replaced, a name never comes back (a rollback only
returns to snapshots that still hold it). So the retained snapshots can use only the index
manifest of the first retained one, besides those of tags, and an expired snapshot's index
manifest and files are deleted unless one of those names them. A manifest that cannot be read
keeps its files (orphan removal collects them later); the first retained one or a tag's that
cannot be read stops the expiration before anything is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def _files_of(store: FileStore, manifest: str) -> set[str]:
    return {store.paths.index_file(e.file_name) for e in store.index_entries(manifest)}


def index_files_to_expire(
    store: FileStore, expired: Iterable[Snapshot], first_kept: Snapshot, tags: Iterable[Snapshot]
) -> tuple[list[str], list[str]]:
    """(index files, index manifest paths) of ``expired`` snapshots that neither ``first_kept``
    nor a tag uses; index files come first in deletion order."""
    kept_manifests = {s.index_manifest for s in (first_kept, *tags) if s.index_manifest}
    doomed_manifests = [m for m in dict.fromkeys(s.index_manifest for s in expired if s.index_manifest)
                        if m not in kept_manifests]
    if not doomed_manifests:
        return [], []
    kept_files: set[str] = set()
    for name in kept_manifests:
        try:
            kept_files |= _files_of(store, name)
        except CorruptMetadataError as exc:
            raise CorruptMetadataError(
                f"Cannot expire snapshots of {store.name}: index manifest {name} of a retained snapshot or "
                f"tag cannot be read ({exc}); nothing was deleted"
            ) from exc
    doomed_files: dict[str, None] = {}
    for name in doomed_manifests:
        try:
            doomed_files.update(dict.fromkeys(sorted(_files_of(store, name) - kept_files)))
        except CorruptMetadataError:
            continue  # already gone or unreadable: its files stay for orphan removal
    return list(doomed_files), [store.paths.manifest_file(m) for m in doomed_manifests]


def statistics_to_expire(
    store: FileStore, expired: Iterable[Snapshot], first_kept: Snapshot, tags: Iterable[Snapshot]
) -> list[str]:
    """Paths of the statistics files (``statistics/``, an ANALYZE's) ``expired`` snapshots name
    and neither ``first_kept`` nor a tag does (Java's ``cleanUnusedStatisticsManifests``).

    A commit carries the latest snapshot's statistics name forward or drops it, and a new ANALYZE
    writes a new file: as with index manifests, a retained snapshot can name an expired one's
    file only if the first retained one does (or a tag, after a rollback to it)."""
    kept = {s.statistics for s in (first_kept, *tags) if s.statistics}
    doomed = dict.fromkeys(s.statistics for s in expired if s.statistics and s.statistics not in kept)
    return [store.paths.statistics_file(name) for name in doomed if name is not None]


__all__ = ["index_files_to_expire", "statistics_to_expire"]

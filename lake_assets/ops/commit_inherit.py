"""What a new snapshot carries forward from the latest one: log offsets and the statistics file.

Paimon's ``FileStoreCommitImpl.tryCommitOnce`` does this for every commit it makes (APPEND,
COMPACT, OVERWRITE, also truncations and partition drops), 0.9 and HEAD alike:

- ``logOffsets`` (Paimon 0.9 to 1.3; later versions dropped the log system and the field): the
  commit's own offsets, completed with the latest snapshot's for every bucket the commit has none
  for (``putIfAbsent``). lake_assets writes to no log system, so its commits carry the latest
  snapshot's offsets as they are; a Flink job that keeps offsets there finds them after our commit.
- ``statistics`` (the file an ``ANALYZE`` wrote under ``statistics/``): kept while the statistics
  were computed for the table's newest schema. Java reads the file for its ``schemaId`` and drops
  the name (``Schema changed, stats will not be inherited``) when it differs; a file it cannot
  read fails the commit. Expiry then deletes such a file only when no retained snapshot or tag
  names it, and orphan removal keeps every file a snapshot, tag or changelog names.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError

if TYPE_CHECKING:
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)


def inherited_log_offsets(latest: Snapshot | None) -> dict[str, int]:
    """The log offsets of the snapshot following ``latest``: ``latest``'s (a new dict)."""
    return dict(latest.log_offsets) if latest is not None and latest.log_offsets else {}


def statistics_schema_id(store: FileStore, name: str) -> int:
    """The ``schemaId`` of the statistics file ``name`` (a plain file name under ``statistics/``)."""
    path = store.paths.statistics_file(name)  # refuses a name that would leave the directory
    try:
        stats = json.loads(store.file_io.read_bytes(path))
        schema_id = stats["schemaId"] if isinstance(stats, dict) else None
    except FileNotFoundError as exc:
        raise CorruptMetadataError(f"statistics file {name} of {store.name} is missing") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptMetadataError(f"statistics file {name} of {store.name} is not valid JSON: {exc}") from exc
    except KeyError:
        schema_id = None
    if isinstance(schema_id, bool) or not isinstance(schema_id, int):
        raise CorruptMetadataError(f"statistics file {name} of {store.name} has no integer schemaId")
    return schema_id


def inherited_statistics(store: FileStore, latest: Snapshot | None, schema_id: int) -> str | None:
    """The statistics file the snapshot following ``latest`` names: ``latest``'s while its
    statistics are of ``schema_id`` (the schema the new snapshot records), else none.

    Raises `CorruptMetadataError` when the file cannot be read, as Java's commit fails then: a
    commit must not guess whether statistics it cannot read still describe the table."""
    if latest is None or latest.statistics is None:
        return None
    try:
        of_schema = statistics_schema_id(store, latest.statistics)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(
            f"Cannot commit to {store.name}: snapshot {latest.id} names {exc}; nothing was committed"
        ) from exc
    if of_schema != schema_id:
        log.info("Statistics %s of %s are of schema %d, not %d: the new snapshot carries none "
                 "(Java: schema changed, stats will not be inherited)", latest.statistics, store.name,
                 of_schema, schema_id)
        return None
    return latest.statistics


__all__ = ["inherited_log_offsets", "inherited_statistics", "statistics_schema_id"]

"""The commit check of a cross-partition upsert writer: did another writer touch its keys meanwhile?

Paimon supports one writer per cross-partition upsert table (its key index lives in that writer's
RocksDB) and checks nothing at commit. A second writer that bootstrapped from the same snapshot
places keys from a stale index: where both move one key, each retracts it in the old partition and
inserts it in a new one, so a reader finds the key twice, or a delete one of them wrote is lost.

Each message of such a writer carries the snapshot its key index was bootstrapped from
(`CommitMessage.key_index_base`). Before each commit attempt, the APPEND and OVERWRITE snapshots
committed since then by other commit users are compared with the commit: their added data files'
key ranges against the ranges of this commit's new files, and where two ranges overlap, the files'
keys themselves (the key columns only). A shared key fails the commit with `CommitConflictError`
before anything is written; compactions never move a key between buckets and are not looked at.
A snapshot in between that was expired meanwhile cannot be checked: the commit fails as well, as
does a commit after a rollback to before the base snapshot. (A rollback followed by other commits
up to the base id again is not seen: snapshot ids are reused, and the message holds only the id.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CommitConflictError, SnapshotNotFoundError
from lake_assets.formats.data_file_read import read_data_file
from lake_assets.formats.file_layout import KEY_PREFIX
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.manifest import DataFileMeta, FileKind
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.store.file_store import FileStore

_Located = tuple[bytes, int, DataFileMeta]


def key_index_base(messages: Sequence[CommitMessage]) -> int | None:
    """The oldest key-index base of the messages (None: no cross-partition writer's)."""
    bases = [m.key_index_base for m in messages if m.key_index_base >= 0]
    return min(bases) if bases else None


def check_key_index_race(store: FileStore, latest: Snapshot | None, messages: Sequence[CommitMessage],
                         commit_user: str, cleared: set[int] | None = None) -> None:
    """Raise `CommitConflictError` when a commit of another user since the messages' key-index
    base added a key that the messages' new files hold (see the module doc). ``cleared``: ids of
    snapshots known to add no other writer's keys (this user's, compactions), filled here, so that
    a long-lived writer's committer reads each snapshot once and one expired since stays checked."""
    cleared = set() if cleared is None else cleared
    base = key_index_base(messages)
    if base is None:
        return
    if base > 0 and (latest is None or latest.id < base):
        # rolled back past the snapshot the index was read from: keys it saw moved may be back
        # where they were (a move now would leave them in two partitions)
        raise CommitConflictError(
            f"Cannot commit to {store.name}: the table was rolled back to before snapshot {base}, which this "
            "cross-partition writer's key index was read from, so where its keys live now is unknown; write "
            "again with a new writer")
    if latest is None or latest.id == base:
        return
    ours: list[_Located] = [(m.partition, m.bucket, f) for m in messages for f in m.new_files]
    if not ours:
        return
    key_names = list(store.schema.trimmed_primary_keys)
    key_types = store.schema.types(key_names)
    sm = store.snapshot_manager
    scan = store.file_store_scan()
    cache: dict[str, pa.Array] = {}
    for sid in range(base + 1, latest.id + 1):
        if sid in cleared:
            continue
        try:
            snap = sm.snapshot(sid)
        except SnapshotNotFoundError:
            raise CommitConflictError(
                f"Cannot commit to {store.name}: snapshot {sid}, committed after the snapshot {base} this "
                "cross-partition writer's key index was read from, has expired, so whether it moved the same "
                "keys cannot be checked; write again") from None
        if snap.commit_user == commit_user or snap.commit_kind not in (CommitKind.APPEND, CommitKind.OVERWRITE):
            cleared.add(sid)
            continue
        theirs = [(e.partition, e.bucket, e.file) for e in scan.delta_entries(snap) if e.kind == FileKind.ADD]
        for mine in ours:
            for other in theirs:
                if _ranges_overlap(mine[2], other[2], key_types) and _share_keys(store, mine, other, key_names,
                                                                                  cache):
                    raise CommitConflictError(
                        f"Cannot commit to {store.name}: snapshot {sid} of another writer "
                        f"({snap.commit_user}) wrote keys this cross-partition upsert also writes since "
                        f"snapshot {base}, which its key index was read from; Paimon supports one writer "
                        "per cross-partition table (a key could end up in two partitions, or a delete be "
                        "lost); write again")


def _ranges_overlap(a: DataFileMeta, b: DataFileMeta, key_types: list[Any]) -> bool:
    lo_a, hi_a = deserialize_row(a.min_key, key_types), deserialize_row(a.max_key, key_types)
    lo_b, hi_b = deserialize_row(b.min_key, key_types), deserialize_row(b.max_key, key_types)
    return compare_keys(lo_a, hi_b, key_types) <= 0 and compare_keys(lo_b, hi_a, key_types) <= 0


def _keys(store: FileStore, located: _Located, key_names: list[str], cache: dict[str, pa.Array]) -> pa.Array:
    """The keys of a data file as one struct array (its key columns only, cached per file)."""
    partition, bucket, meta = located
    got = cache.get(meta.file_name)
    if got is None:
        columns = [KEY_PREFIX + k for k in key_names]
        table = read_data_file(store.file_io, store.data_file_path(partition, bucket, meta), columns, meta.file_size)
        got = cache[meta.file_name] = pa.StructArray.from_arrays(
            [table.column(c).combine_chunks() for c in columns], names=key_names)
    return got


def _share_keys(store: FileStore, a: _Located, b: _Located, key_names: list[str], cache: dict[str, pa.Array]) -> bool:
    keys_a, keys_b = _keys(store, a, key_names, cache), _keys(store, b, key_names, cache)
    if len(key_names) == 1:
        return bool(pc.any(pc.is_in(keys_a.field(0), value_set=keys_b.field(0))).as_py())
    joined = pa.table(keys_a.flatten(), names=key_names).join(
        pa.table(keys_b.flatten(), names=key_names), keys=key_names, join_type="inner")
    return bool(joined.num_rows > 0)

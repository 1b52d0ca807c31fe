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
A rollback to before the base snapshot fails the commit, also when other commits reused the ids up
to the base since: a message carries the base snapshot's identity (`snapshot_identity`), not its id
alone. A snapshot needed by the check that expired meanwhile (the base, or one after it not yet
checked) cannot be checked either: the commit fails, telling to create a new writer. A live writer
does not get there: its lease (ops/writer_lease.py) keeps the snapshots from its base on from
expiring, and it keeps its index across commits (as Paimon's Flink writer keeps its RocksDB across
checkpoints, never re-reading it) and moves its base over its own commits and compactions
(`advance_base`), which place no key its index does not know; one idle for longer than its lease
may get there.

Its index also holds the placements of the rounds (`prepare_commit`s) it prepared since its base,
which are in the table only once their commits land. A commit that failed (a conflict, any error,
or one never made) leaves placements the table does not have: a later round would retract a moved
key in the wrong partition and leave it live in its real one. Paimon's Flink writer never gets
there (a failed commit fails the job, which restarts from a checkpoint with a fresh index). So each
message names one new data file of every earlier round with rows not seen landed at its writer's
last base move (`CommitMessage.key_index_pending`), and the commit refuses unless each of those
files was added by a snapshot after the base or is in the commit itself (rounds committed
together): whether a round landed is looked up, never assumed, which also settles a round whose
commit ended in `CommitStateUnknownError`. Pipelined rounds keep working: round N+1 may be written
and prepared before round N's commit lands, as long as N lands first. A writer that lost a round
never commits again: create a new one. A compacting writer whose round's files the committer
deleted stops earlier, at its next `prepare_commit` (ops/writer_rounds.py: it closes, its index
and lease go with it).
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
    from lake_assets.ops.scan import FileStoreScan
    from lake_assets.store.file_store import FileStore

_Located = tuple[bytes, int, DataFileMeta]


def snapshot_identity(snapshot: Snapshot) -> str:
    """What tells a snapshot from another one of the same id (ids are reused after a rollback):
    its commit user, identifier and time and its manifest lists (each named by a new UUID)."""
    return "/".join((str(snapshot.time_millis), str(snapshot.commit_identifier), snapshot.base_manifest_list,
                     snapshot.delta_manifest_list, snapshot.commit_user))


def key_index_base(messages: Sequence[CommitMessage]) -> int | None:
    """The oldest key-index base of the messages (None: no cross-partition writer's)."""
    bases = [m.key_index_base for m in messages if m.key_index_base >= 0]
    return min(bases) if bases else None


def _check_base(store: FileStore, latest: Snapshot | None, base: int, identity: str) -> None:
    """Fail unless snapshot ``base`` is still the one a writer read its key index from."""
    if base == 0:
        return
    rolled_back = (f"Cannot commit to {store.name}: the table was rolled back to before snapshot {base}, which "
                   "this cross-partition writer's key index was read from")
    # keys the index saw moved may be back where they were: a move now would leave them in two
    # partitions (and a retraction go to the wrong one)
    if latest is None or latest.id < base:
        raise CommitConflictError(f"{rolled_back}, so where its keys live now is unknown; write again with a new "
                                  "writer")
    try:
        snap = latest if latest.id == base else store.snapshot_manager.snapshot(base)
    except SnapshotNotFoundError:
        raise CommitConflictError(
            f"Cannot commit to {store.name}: snapshot {base} expired since this cross-partition writer read its "
            "key index from it, so whether the table was rolled back and its keys moved since cannot be "
            "checked; create a new writer (it reads the index from the latest snapshot)") from None
    if snapshot_identity(snap) != identity:
        raise CommitConflictError(
            f"{rolled_back}, and snapshot {base} is another commit now (of {snap.commit_user}, identifier "
            f"{snap.commit_identifier}), so where its keys live now is unknown; write again with a new writer")


def check_key_index_race(store: FileStore, latest: Snapshot | None, messages: Sequence[CommitMessage],
                         commit_user: str, cleared: dict[int, str] | None = None) -> None:
    """Raise `CommitConflictError` when a commit of another user since the messages' key-index
    base added a key that the messages' new files hold, or the base is not the snapshot it was
    (see the module doc). ``cleared``: the identities of snapshots known to add no other writer's
    keys (this user's, compactions) by id, filled here, so that a committer used for many commits
    reads each such snapshot's changes once."""
    cleared = {} if cleared is None else cleared
    base = key_index_base(messages)
    if base is None:
        return
    for anchor, identity in {(m.key_index_base, m.key_index_base_identity) for m in messages
                             if m.key_index_base >= 0}:
        _check_base(store, latest, anchor, identity)
    _check_rounds_landed(store, latest, messages, base)
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
        try:
            snap = latest if sid == latest.id else sm.snapshot(sid)
        except SnapshotNotFoundError:
            # the base is still there (checked above): expired in the meantime
            raise CommitConflictError(
                f"Cannot commit to {store.name}: snapshot {sid} expired since this cross-partition writer read "
                f"its key index (from snapshot {base}), so whether it moved the same keys cannot be checked; "
                "create a new writer (it reads the index from the latest snapshot)") from None
        identity = snapshot_identity(snap)
        if cleared.get(sid) == identity:
            continue
        if snap.commit_user == commit_user or snap.commit_kind not in (CommitKind.APPEND, CommitKind.OVERWRITE):
            cleared[sid] = identity
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


def _check_rounds_landed(store: FileStore, latest: Snapshot | None, messages: Sequence[CommitMessage],
                         base: int) -> None:
    """Fail unless the file each earlier round of the messages' writer left pending was added by
    an APPEND snapshot after ``base`` (newest first: the round before is the likely one) or is in
    this commit (see the module doc)."""
    missing = ({x for m in messages for x in m.key_index_pending}
               - {f.file_name for m in messages for f in m.new_files})
    if not missing:
        return
    sm = store.snapshot_manager
    scan = store.file_store_scan()
    for sid in range(latest.id if latest is not None else 0, base, -1):
        try:
            snap = latest if latest is not None and sid == latest.id else sm.snapshot(sid)
        except SnapshotNotFoundError:
            raise CommitConflictError(
                f"Cannot commit to {store.name}: snapshot {sid} expired, so whether an earlier commit of this "
                "cross-partition writer landed (its key index holds that commit's placements) cannot be checked; "
                "create a new writer (it reads the index from the latest snapshot)") from None
        if snap.commit_kind == CommitKind.APPEND:
            missing -= added_file_names(scan, snap)
            if not missing:
                return
    raise CommitConflictError(
        f"Cannot commit to {store.name}: an earlier commit of this cross-partition writer (the one adding data "
        f"file {min(missing)}) did not land; its key index holds that commit's placements and no longer matches "
        "the table (a moved key would stay live in two partitions): create a new writer (it reads the index "
        "from the latest snapshot) and write that data again")


def added_file_names(scan: FileStoreScan, snap: Snapshot) -> set[str]:
    """The data files a snapshot added (its delta manifests)."""
    return {e.file.file_name for e in scan.delta_entries(snap) if e.kind == FileKind.ADD}


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


def advance_base(store: FileStore, base: int, identity: str, commit_user: str,
                 pending: Sequence[str] = ()) -> tuple[int, str, tuple[str, ...]]:
    """A writer's key-index base moved over the snapshots after it that place no key its index
    does not know: compactions (they move no key between buckets) and APPENDs of its own commit
    user (it placed their keys; Paimon's rule of one writer per cross-partition table, whose
    commit user names it). Stops at any other snapshot, at one that cannot be read, and where
    the base is not the snapshot it was (a rollback): the commit check then decides. A base
    that expired is vouched for by the writer's own APPEND after it (behind compactions only):
    that commit's check found the base intact, and its id follows the base's history.
    With it, what is left of ``pending`` (the writer's rounds not seen landed, by one file each):
    those not added by an own APPEND at or before the new base (only those are read)."""
    sm = store.snapshot_manager
    latest = sm.latest_id()
    left = tuple(pending)
    if latest is None or latest <= base:
        return base, identity, left
    verified = base == 0
    if not verified:
        try:
            if snapshot_identity(sm.snapshot(base)) != identity:
                return base, identity, left
            verified = True
        except SnapshotNotFoundError:
            pass  # expired: the writer's next own commit vouches for it
    moved = (base, identity, left)
    scan: FileStoreScan | None = None  # made at the first own APPEND read
    try:
        for sid in range(base + 1, latest + 1):
            snap = sm.snapshot(sid)
            own = snap.commit_kind == CommitKind.APPEND and snap.commit_user == commit_user
            if not own and snap.commit_kind != CommitKind.COMPACT:
                break
            verified = verified or own
            base, identity = sid, snapshot_identity(snap)
            if own and left:
                # a round seen landed: once the base is past it, the commit check cannot see it
                scan = scan or store.file_store_scan()
                added = added_file_names(scan, snap)
                left = tuple(x for x in left if x not in added)
            if verified:
                moved = (base, identity, left)
    except SnapshotNotFoundError:
        pass
    return moved


def holds_exactly_the_table(store: FileStore, base: int, identity: str, commit_user: str,
                            pending: Sequence[str]) -> int | None:
    """The latest snapshot id if an index read at snapshot ``base`` (of ``identity``) that placed the rounds
    ``pending`` (one new file each) says where every key of the latest snapshot lives: the base
    is intact, and every snapshot since is a compaction (it moves no key), an APPEND of
    ``commit_user`` adding no file, or one adding a file of ``pending`` (that round landed), and
    every round of ``pending`` landed. The commit user alone does not tell: the micro-batches of
    a streaming write share it, each written by whichever worker ran it, with an index of its own.
    None for no; a snapshot that cannot be read says no."""
    sm = store.snapshot_manager
    latest = sm.latest_id() or 0
    if latest < base:
        return None
    left = set(pending)
    scan: FileStoreScan | None = None
    try:
        if base and snapshot_identity(sm.snapshot(base)) != identity:
            return None
        for sid in range(base + 1, latest + 1):
            snap = sm.snapshot(sid)
            if snap.commit_kind == CommitKind.COMPACT:
                continue
            if snap.commit_kind != CommitKind.APPEND or snap.commit_user != commit_user:
                return None
            scan = scan or store.file_store_scan()
            added = added_file_names(scan, snap)
            if added and not added & left:
                return None  # another index's round (another worker's micro-batch)
            left -= added
    except SnapshotNotFoundError:
        return None
    return None if left else latest

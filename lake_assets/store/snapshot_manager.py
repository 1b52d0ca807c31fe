"""Finding, reading and atomically creating snapshot files; the LATEST and EARLIEST hints."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator

from lake_assets.errors import CorruptMetadataError, SnapshotNotFoundError
from lake_assets.io.file_io import FileIO, PreparedCreate
from lake_assets.paths import TablePaths
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store import read_once

# fullmatch with ASCII digits: `$` accepts a final newline and `\\d` other scripts' digits
_SNAPSHOT_NAME = re.compile(r"snapshot-([0-9]+)")
# ``expiring/EXPIRING-<uuid>`` holds the id an expiration in progress expires up to (exclusive).
# Paimon never looks at that directory: its readers list ``snapshot/`` by the ``snapshot-`` prefix,
# and its orphan clean (0.9 to HEAD) lists only snapshot/, changelog/, manifest/, index/,
# statistics/ and the partition and bucket directories - never another directory at the table
# root. In ``snapshot/`` a marker is an orphan to it: every file there that is not
# ``snapshot-<id>``, EARLIEST or LATEST goes once older than the clean's bound (default a day,
# any time the caller picks), which would silently end the handshake below.
_EXPIRING_PREFIX = "EXPIRING-"
MARKER_DIR = "expiring"
_ASCII_ID = re.compile(r"[0-9]+")


def read_snapshot_file(
    file_io: FileIO, path: str, snapshot_id: int, file_name: str, table_name: str, *, missing: str
) -> Snapshot:
    """Parse a snapshot JSON file (snapshot, changelog); ``missing`` is the not-found message.
    Within an operation (`lake_assets.store.read_once`) each file is read once."""
    snap = read_once.cached(file_io.protocol, path)
    if snap is not None:
        return snap
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise SnapshotNotFoundError(missing) from None
    snap = Snapshot.from_json(data, f"{file_name} of {table_name}")
    if snap.id != snapshot_id:
        raise CorruptMetadataError(f"File {file_name} of {table_name} holds snapshot id {snap.id}")
    read_once.remember(file_io.protocol, path, snap)
    return snap


def snapshot_ids_of(names: list[str]) -> list[int]:
    """The snapshot ids among the names a listing of ``snapshot/`` holds, ascending."""
    return sorted(int(m.group(1)) for name in names if (m := _SNAPSHOT_NAME.fullmatch(name)))


class SnapshotManager:
    """Reads the snapshot directory of one table. Hints are trusted only after existence checks."""

    def __init__(self, file_io: FileIO, paths: TablePaths, table_name: str = "table") -> None:
        self.file_io = file_io
        self.paths = paths
        self.table_name = table_name

    # ------------------------------------------------------------- discovery
    def snapshot_ids(self) -> list[int]:
        """All snapshot ids present, ascending (lists the directory)."""
        return snapshot_ids_of(self.file_io.list_names(self.paths.snapshot_dir))

    def read_hint(self, name: str) -> int | None:
        """The id in the snapshot directory's ``EARLIEST`` or ``LATEST`` hint file, or None when the
        file is missing or not a number (a hint may lag: callers check the id exists)."""
        try:
            text = self.file_io.read_text(f"{self.paths.snapshot_dir}/{name}")
        except FileNotFoundError:
            return None
        return int(text) if text.isdigit() else None

    def latest_id(self) -> int | None:
        """Id of the newest snapshot, or None for an empty table."""
        hint = self.read_hint("LATEST")
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            # The hint may lag behind a commit that crashed before updating it: walk forward.
            return hint
        if hint is not None and self.exists(hint):
            nxt = hint + 1
            while self.exists(nxt + 1):
                nxt += 1
            return nxt
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self.read_hint("EARLIEST")
        if hint is not None and self.exists(hint):
            return hint
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def exists(self, snapshot_id: int) -> bool:
        return self.file_io.is_file(self.paths.snapshot_file(snapshot_id))

    # --------------------------------------------------------------- reading
    def snapshot(self, snapshot_id: int) -> Snapshot:
        return read_snapshot_file(
            self.file_io, self.paths.snapshot_file(snapshot_id), snapshot_id, f"snapshot-{snapshot_id}",
            self.table_name, missing=f"Table {self.table_name} has no snapshot {snapshot_id}",
        )

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        try:
            return self.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            return None

    def latest(self) -> Snapshot | None:
        sid = self.latest_id()
        return None if sid is None else self.snapshot(sid)

    def snapshots(self) -> Iterator[Snapshot]:
        """Every present snapshot, oldest first (skips ids that vanish while listing)."""
        for sid in self.snapshot_ids():
            snap = self.try_snapshot(sid)
            if snap is not None:
                yield snap

    # ------------------------------------------------------- time travel
    # Paimon's `SnapshotManager` finds snapshots by time with binary searches over the ids from
    # the earliest to the latest (0.9 and HEAD), reading about log2(n) snapshot files, not n: a
    # table may retain thousands, each a GET on S3. Ours are the same searches step for step, so
    # they answer as Java's does also where commit times tie (several commits in one millisecond,
    # as other writers make them) or go back (clocks of different writers).
    def earlier_or_equal_time(self, time_millis: int) -> Snapshot | None:
        """The snapshot a read as of ``time_millis`` sees (time travel, a timestamp stream's
        schema), as Paimon's ``earlierOrEqualTimeMills``: one committed at or before it. Where
        several were committed in that millisecond, the one the binary search meets first, as
        Java's (our committers stamp each snapshot after its parent, so ours never tie). None when
        the earliest snapshot is newer, as HEAD (0.9 returned the earliest snapshot)."""
        first, latest = self._search_bounds()
        if first is None or first.time_millis > time_millis:
            return None
        lo, hi, found = first.id, latest, None
        while lo <= hi:
            mid = lo + (hi - lo) // 2
            snap = first if mid == first.id else self.try_snapshot(mid)
            if snap is None:  # expired during the search, or a gap Java would fail on
                return self._last_present(lambda t: t <= time_millis)
            if snap.time_millis > time_millis:
                hi = mid - 1
            elif snap.time_millis < time_millis:
                lo, found = mid + 1, snap
            else:
                return snap
        return found

    def earlier_than_time(self, time_millis: int) -> int | None:
        """The id of the newest snapshot committed before ``time_millis`` (a stream from that
        time starts after it), as Paimon's ``earlierThanTimeMills`` over snapshots finds it; None
        when the earliest snapshot is not older."""
        first, latest = self._search_bounds()
        if first is None or first.time_millis >= time_millis:
            return None
        lo, hi = first.id, latest
        while lo < hi:
            mid = (lo + hi + 1) // 2
            snap = self.try_snapshot(mid)
            if snap is None:
                found = self._last_present(lambda t: t < time_millis)
                return None if found is None else found.id
            if snap.time_millis < time_millis:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _search_bounds(self) -> tuple[Snapshot | None, int]:
        """(the earliest snapshot, the latest id) of a search by time; the earliest is the first
        present from the EARLIEST hint on (an expiration may be deleting from there, as HEAD's
        ``retryEarliestSnapshot`` allows), else from a listing."""
        latest = self.latest_id()
        earliest = self.earliest_id()
        if latest is None or earliest is None:
            return None, 0
        snap = self.try_snapshot(earliest)
        if snap is None:
            ids = self.snapshot_ids()
            snap = next((s for s in (self.try_snapshot(i) for i in ids[:3]) if s is not None), None)
        return snap, latest

    def _last_present(self, before: Callable[[int], bool]) -> Snapshot | None:
        """The newest listed snapshot whose time ``before`` accepts, by binary search over the
        listing: the fallback where an id between the earliest and the latest is missing (Java's
        search fails there). An id that vanishes meanwhile was expired, so it is older than the
        answer."""
        ids = self.snapshot_ids()
        lo, hi, found = 0, len(ids) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            snap = self.try_snapshot(ids[mid])
            if snap is None or before(snap.time_millis):
                lo = mid + 1
                found = snap or found
            else:
                hi = mid - 1
        return found

    # ----------------------------------------------------------------- writing
    def try_commit(self, snapshot: Snapshot) -> bool:
        """Create ``snapshot-<id>`` if absent. False means another committer took the id."""
        return self.file_io.try_create(self.paths.snapshot_file(snapshot.id), snapshot.to_json().encode())

    def prepare_commit(self, snapshot: Snapshot) -> PreparedCreate:
        """`try_commit` of ``snapshot`` prepared ahead (`FileIO.prepare_create`): its ``create``
        is the put, ``discard`` drops it."""
        return self.file_io.prepare_create(self.paths.snapshot_file(snapshot.id), snapshot.to_json().encode())

    def delete(self, snapshot_id: int) -> None:
        """Delete ``snapshot-<id>`` if it is there (one request on an object store: nothing asks
        whether it was); this operation no longer remembers it (a later commit may take the id)."""
        path = self.paths.snapshot_file(snapshot_id)
        self.file_io.discard(path)
        read_once.forget(self.file_io.protocol, path)

    def write_latest_hint(self, snapshot_id: int) -> None:
        # A hint is only a hint: failures are tolerated because readers verify it.
        with contextlib.suppress(OSError):
            self.file_io.overwrite_atomic(f"{self.paths.snapshot_dir}/LATEST", str(snapshot_id).encode())

    def write_earliest_hint(self, snapshot_id: int) -> None:
        with contextlib.suppress(OSError):
            self.file_io.overwrite_atomic(f"{self.paths.snapshot_dir}/EARLIEST", str(snapshot_id).encode())

    # ------------------------------------------------------- expiry handshake
    # Expiry and taggers (and consumers) meet without a lock, on storage that is only strongly
    # consistent per object (S3): each side writes its own object first and reads the other's
    # second. Expiry writes its marker, then reads tags and consumers, then deletes; a tagger
    # writes its tag, then reads the markers, then checks the snapshot file. Whichever write comes
    # second is followed by a read that sees the first: either expiry sees the tag and keeps its
    # files, or the tagger sees the marker (or, once expiry finished, the missing snapshot file;
    # snapshot files go after the files they reference, markers after that) and withdraws the tag.
    @property
    def marker_dir(self) -> str:
        """Where expiry markers live: a directory no Paimon engine reads or cleans (a branch's
        under its own directory: its snapshots are its own)."""
        return f"{self.paths.meta_root.rstrip('/')}/{MARKER_DIR}"

    def _marker_dirs(self) -> tuple[str, str]:
        # the guard's directory, then snapshot/: lake_assets before session 12 wrote (and still
        # reads) markers there only, so a marker is written to both and read from both
        return self.marker_dir, self.paths.snapshot_dir

    def begin_expiry(self, end: int) -> str:
        """Announce that snapshots below ``end`` are being expired; returns the marker's path.

        The marker (``expiring/EXPIRING-<uuid>``) is out of reach of Paimon's orphan clean, so it
        holds until `end_expiry` withdraws it, however long the expiry runs or, after a failure,
        stays. Its twin in ``snapshot/`` is for older lake_assets taggers, which look there only;
        Paimon's clean may delete that one, as it always could."""
        name = f"{_EXPIRING_PREFIX}{uuid.uuid4().hex}"
        path = f"{self.marker_dir}/{name}"
        self.file_io.overwrite_atomic(path, str(end).encode())
        try:
            self.file_io.overwrite_atomic(f"{self.paths.snapshot_dir}/{name}", str(end).encode())
        except BaseException:
            with contextlib.suppress(Exception):
                self.file_io.delete(path)  # nothing was deleted yet: no need to keep the guard
            raise
        return path

    def end_expiry(self, marker: str, *, completed_below: int | None = None) -> None:
        """Withdraw ``marker`` (and its twin). A failed expiration that may have deleted something
        leaves its marker (snapshots below it may have lost files: tagging them stays refused).

        ``completed_below``: an expiration that removed every snapshot file below this id also
        withdraws the markers of failed ones up to it - for ids without a snapshot file the
        tagger's existence check refuses by itself.
        """
        name = marker.rsplit("/", 1)[-1]
        self.file_io.discard(f"{self.paths.snapshot_dir}/{name}")
        self.file_io.discard(marker)
        if completed_below is None:
            return
        # one listing of each directory, read after the deletes: snapshot/ tells both the ids
        # left and the markers' twins
        listed = {d: self.file_io.list_names(d) for d in self._marker_dirs()}
        ids = [int(m.group(1)) for m in map(_SNAPSHOT_NAME.fullmatch, listed[self.paths.snapshot_dir]) if m]
        if ids and min(ids) < completed_below:
            return  # some older snapshot file is still there: keep the stale markers
        for path, end in self._markers(listed):
            if end is not None and end <= completed_below:
                self.file_io.discard(path)

    def _markers(self, listed: dict[str, list[str]] | None = None) -> list[tuple[str, int | None]]:
        """(path, end) of every marker in both directories (their names as ``listed``, else
        listed now); end None when it is not an id."""
        out: list[tuple[str, int | None]] = []
        for directory in self._marker_dirs():
            names = listed[directory] if listed is not None else self.file_io.list_names(directory)
            for name in names:
                if not name.startswith(_EXPIRING_PREFIX):
                    continue
                path = f"{directory}/{name}"
                try:
                    text = self.file_io.read_text(path).strip()
                except FileNotFoundError:
                    continue  # finished meanwhile
                out.append((path, int(text) if _ASCII_ID.fullmatch(text) else None))
        return out

    def expiring_below(self) -> int | None:
        """The highest ``end`` of the expirations in progress (or that failed midway), or None."""
        ends = []
        for path, end in self._markers():
            if end is None:
                name = path.rsplit("/", 1)[-1]
                raise CorruptMetadataError(f"Expiry marker {name} of {self.table_name} is corrupt")
            ends.append(end)
        return max(ends) if ends else None

    def check_retained(self, snapshot_id: int, what: str) -> None:
        """Raise `SnapshotNotFoundError` unless snapshot ``snapshot_id`` is neither being nor has been
        expired. Call it after publishing whatever should keep the snapshot (see the handshake)."""
        below = self.expiring_below()  # markers first: an expiry removes its marker last
        if below is not None and snapshot_id < below:
            raise SnapshotNotFoundError(
                f"Cannot {what} of {self.table_name}: snapshot {snapshot_id} is being expired "
                f"(an expiration of snapshots below {below} is in progress or failed midway)"
            )
        if not self.exists(snapshot_id):
            raise SnapshotNotFoundError(f"Cannot {what} of {self.table_name}: snapshot {snapshot_id} was expired")

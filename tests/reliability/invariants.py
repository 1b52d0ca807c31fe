"""One reusable checker of what a table must look like after anything ran against it.

`TableInvariants` lists the table once (after every process ended, so the listing is stable) and
walks metadata by hand - snapshot → manifest lists → manifests → data, changelog and index files -
so that a missing file is reported by name, not only when some read happens to touch it. The
checks return lists of violations (empty = fine) so that a test can report all of them at once.

`tree_digest` hashes a directory or an S3 prefix, to prove that nothing outside the warehouse
changed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import fsspec

from lake_assets.spec.manifest import FileKind
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER as _BATCH
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table import Table


@dataclass
class Holder:
    """Something that keeps a snapshot's files alive: a snapshot, a tag or a consumer."""

    kind: str
    name: str
    snapshot: Snapshot


@dataclass
class TableInvariants:
    """Checks of one table; ``table`` is a fresh handle opened after the processes ended."""

    table: Table
    present: set[str] = field(init=False)

    def __post_init__(self) -> None:
        root = self.table.paths.root.rstrip("/")
        self.present = {_norm(st.path) for st in self.table.file_io.walk_files(root)}

    # ------------------------------------------------------------- holders
    def holders(self) -> list[Holder]:
        """Every retained snapshot, every tag, and the snapshot each consumer reads next."""
        t = self.table
        out = [Holder("snapshot", str(s.id), s) for s in t.snapshots()]
        out += [Holder("tag", name, tag.snapshot) for name, tag in t.store.tag_manager().tags().items()]
        sm = t.snapshot_manager
        for cid, consumer in t.store.consumer_manager().consumers().items():
            snap = sm.try_snapshot(consumer.next_snapshot)
            if snap is not None:
                out.append(Holder("consumer", cid, snap))
        return out

    # -------------------------------------------------------------- checks
    def snapshot_ids_contiguous(self) -> list[str]:
        ids = self.table.snapshot_manager.snapshot_ids()
        if ids and ids != list(range(ids[0], ids[-1] + 1)):
            missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
            return [f"snapshot ids are not contiguous: {missing} missing between {ids[0]} and {ids[-1]}"]
        return []

    def consumers_resumable(self) -> list[str]:
        """A consumer's next snapshot must exist, or be the one after the latest (caught up)."""
        sm = self.table.snapshot_manager
        latest = sm.latest_id() or 0
        out = []
        for cid, consumer in self.table.store.consumer_manager().consumers().items():
            nxt = consumer.next_snapshot
            if nxt != latest + 1 and sm.try_snapshot(nxt) is None:
                out.append(f"consumer {cid} is at snapshot {nxt}, which is gone (latest {latest})")
        return out

    def files_present(self, holders: Iterable[Holder] | None = None) -> list[str]:
        """Every file each holder references exists; an ADD of a file already live is reported too."""
        out: list[str] = []
        for h in self.holders() if holders is None else holders:
            out += [f"{h.kind} {h.name} (snapshot {h.snapshot.id}): {p}" for p in self._problems(h.snapshot)]
        return out

    def no_duplicate_commits(self) -> list[str]:
        """No (commit user, identifier, kind) appears in two retained snapshots (a replayed commit)."""
        seen = Counter(
            (s.commit_user, s.commit_identifier, s.commit_kind)
            for s in self.table.snapshots()
            if s.commit_identifier != _BATCH
        )
        return [f"commit {k} landed {n} times" for k, n in seen.items() if n > 1]

    def claimed_ids_unique(self, claims: Mapping[str, Iterable[int]], users: Mapping[str, str]) -> list[str]:
        """Each snapshot id was reported as created by one commit only, and a retained snapshot of a
        claimed id carries its claimant's commit user (when the claimant has a fixed one)."""
        owner: dict[int, str] = {}
        out = []
        for who, ids in claims.items():
            for sid in ids:
                if sid in owner:
                    out.append(f"snapshot {sid} written twice: by {owner[sid]} and by {who}")
                owner[sid] = who
        sm = self.table.snapshot_manager
        for sid, who in owner.items():
            snap = sm.try_snapshot(sid)
            if snap is not None and who in users and snap.commit_user != users[who]:
                out.append(f"snapshot {sid} claimed by {who} was committed by {snap.commit_user}")
        return out

    def reads_fully(self, holders: Iterable[Holder] | None = None) -> list[str]:
        """Every holder's snapshot reads through the table's reader (decoding every live file); a
        snapshot held several times (a tag and a consumer on it) is read once."""
        out = []
        done: set[int] = set()
        for h in self.holders() if holders is None else holders:
            if h.snapshot.id in done:
                continue
            done.add(h.snapshot.id)
            try:
                if h.kind == "tag":
                    self.table.to_arrow(tag=h.name)
                else:
                    self.table.to_arrow(snapshot_id=h.snapshot.id)
            except Exception as exc:  # report every holder, not only the first broken one
                out.append(f"{h.kind} {h.name} (snapshot {h.snapshot.id}) does not read: {exc!r}")
        return out

    def check_all(self) -> list[str]:
        holders = self.holders()
        return [
            *self.snapshot_ids_contiguous(),
            *self.consumers_resumable(),
            *self.no_duplicate_commits(),
            *self.files_present(holders),
            *self.reads_fully(holders),
        ]

    # ------------------------------------------------------------- walking
    def _exists(self, path: str) -> bool:
        return _norm(path) in self.present

    def _problems(self, snap: Snapshot) -> list[str]:
        t = self.table
        mio = t.store.manifest_io()
        out: list[str] = []
        live: dict = {}

        def walk(list_name: str | None, what: str, track_live: bool) -> None:
            if not list_name:
                return
            if not self._exists(t.paths.manifest_file(list_name)):
                out.append(f"{what} manifest list {list_name} is missing")
                return
            for meta in mio.read_manifest_list(list_name):
                if not self._exists(t.paths.manifest_file(meta.file_name)):
                    out.append(f"manifest {meta.file_name} ({what}) is missing")
                    continue
                for e in mio.read_manifest(meta.file_name, meta.file_size):
                    if not track_live:
                        self._check_file(e, what, out)
                        continue
                    ident = e.identifier()
                    if e.kind == FileKind.ADD:
                        if ident in live:
                            out.append(f"data file {e.file.file_name} is added twice")
                        live[ident] = e
                    else:
                        live.pop(ident, None)

        walk(snap.base_manifest_list, "base", True)
        walk(snap.delta_manifest_list, "delta", True)
        for e in live.values():
            self._check_file(e, "data", out)
        walk(snap.changelog_manifest_list, "changelog", False)
        if snap.index_manifest and not self._exists(t.paths.manifest_file(snap.index_manifest)):
            out.append(f"index manifest {snap.index_manifest} is missing")
        return out

    def _check_file(self, e, what: str, out: list[str]) -> None:
        path = self.table.store.data_file_path(e.partition, e.bucket, e.file)
        if not self._exists(path):
            out.append(f"{what} file {path} is missing")
        base = path.rsplit("/", 1)[0]
        out += [f"extra file {base}/{x} is missing" for x in e.file.extra_files if not self._exists(f"{base}/{x}")]


def _norm(path: str) -> str:
    """Paths from listings and from the table's path helpers in one form (no scheme, no '//')."""
    p = path.split("://", 1)[-1]
    while "//" in p:
        p = p.replace("//", "/")
    return p.rstrip("/")


def tree_digest(url: str, *, exclude: str | None = None, **storage_options: object) -> dict[str, str]:
    """Relative path → sha256 of every file under ``url`` (a local directory or an fsspec URL),
    except those under the relative directory ``exclude`` (the warehouse)."""
    fs, root = fsspec.core.url_to_fs(url, **storage_options)
    root = root.rstrip("/")
    skip = None if exclude is None else exclude.strip("/") + "/"
    out = {}
    if not fs.exists(root):
        return out
    for path in sorted(fs.find(root)):
        rel = path[len(root) + 1 :]
        if skip is None or not rel.startswith(skip):
            out[rel] = hashlib.sha256(fs.cat_file(path)).hexdigest()
    return out

"""What a compacting writer carries from its earlier rounds, and whether those rounds landed.

A primary-key writer with inline compaction keeps each bucket's files across rounds
(`WriterBase.live_files`): the level-0 files and compaction outputs a round hands to
`prepare_commit` count as the bucket's files for the next round's compaction, before anything is
committed (Java's writer does the same; Flink commits the rounds in order). When a round's commit
fails, the committer deletes the files it wrote (`commit_cleanup`), and a writer that carried
on would compact files that are gone. Java never meets this: a failed commit fails the Flink
job, which restores its writers from the table and replays its input from the last checkpoint.

`RoundLedger` is how the writer finds out by looking, at each later round: a round's files that
a snapshot since added have landed; files that no snapshot added and that are gone were
discarded. Rows discarded that way leave the writer unusable (`WriterStateLostError`: the caller
re-sends them through a new writer); a round whose data landed but whose inline compaction did
not (the committer deletes its outputs and keeps the data) only makes the writer reload its
buckets from the latest snapshot. Files neither added nor gone belong to a round not committed
yet (a committer behind the writer, or an unknown outcome being retried) and stay carried.

Cross-partition upsert writers keep the ledger too, write-only ones included: their key index
holds every prepared round's placements, and their commit check (`key_index_pending`,
ops/key_index_race.py) refuses a commit after a round that did not land. The ledger finds that
earlier: a compacting writer at its next `prepare_commit`, before compacting; a write-only one at
the first write after a `prepare_commit` whose base did not move past every earlier round (so only
after a round not committed yet or lost), before that write places a key or writes a file.
Closing the refused writer drops its index (the lost round's placements with it) and releases its
lease; a round whose compaction alone was lost left its placements in the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.errors import WriterStateLostError
from lake_assets.spec.manifest import FileKind

if TYPE_CHECKING:
    from collections.abc import Callable

    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.writer_state import WriterBase
    from lake_assets.store.file_store import FileStore


@dataclass
class _Round:
    """One prepared round's files, by path: its rows (new level-0 data files) and what its inline
    compactions wrote (outputs and deletion-vector index files), each by file name."""

    rows: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class RoundLedger:
    """The rounds a writer prepared whose landing it has not seen yet, oldest first."""

    seen_snapshot: int | None = None  # snapshots up to this id were looked at
    rounds: list[_Round] = field(default_factory=list)
    _blind: bool = False  # the last look found snapshots after `seen_snapshot` expired

    def record(self, store: FileStore, messages: list[CommitMessage], base: Callable[[], WriterBase]) -> None:
        """Remember a round's messages (as `prepare_commit` returns them); ``base`` gives the
        state the writer started from, whose snapshot the first round's look starts after."""
        if not self.rounds and self.seen_snapshot is None and messages:
            snap = base().snapshot
            self.seen_snapshot = None if snap is None else snap.id
        rnd = _Round()
        for m in messages:
            for f in m.new_files:
                rnd.rows[f.file_name] = store.data_file_path(m.partition, m.bucket, f)
            upgraded = {f.file_name for f in m.compact_before}
            for f in m.compact_after:
                if f.file_name not in upgraded:  # an upgrade keeps its name: it was committed before
                    rnd.outputs[f.file_name] = store.data_file_path(m.partition, m.bucket, f)
            for e in m.index_after:
                rnd.outputs[e.file_name] = store.paths.index_file(e.file_name)
        if rnd.rows or rnd.outputs:
            self.rounds.append(rnd)

    def check(self, store: FileStore, table: str, *, later_rounds_refused: bool = False) -> bool:
        """Look at the table for the rounds not seen landed. Raises `WriterStateLostError` when
        a round's rows were discarded; True when only compaction outputs were (the writer must
        reload its buckets from the latest snapshot; the ledger is then empty).
        ``later_rounds_refused``: the commits of the rounds the writer prepared after a lost
        one are refused (a cross-partition writer's: `key_index_pending`), and the error says so."""
        if not self.rounds:
            return False
        added = self._added_since(store)
        pending: list[_Round] = []
        outputs_lost = False
        prepared = ("messages it prepared after that round are refused at commit: write their rows again too"
                    if later_rounds_refused else "messages already prepared may still be committed")
        for rnd in self.rounds:
            rows = {n: p for n, p in rnd.rows.items() if n not in added}
            outputs = {n: p for n, p in rnd.outputs.items() if n not in added}
            if rnd.outputs and not outputs:
                rows = {}  # its compaction landed, so did its data (committed first): maybe compacted away since
            gone = [p for p in rows.values() if not store.file_io.exists(p)]
            if gone and self._blind:
                raise WriterStateLostError(
                    f"Writer of {table} cannot continue: files of an earlier round are gone (e.g. {gone[0]}) "
                    "and the snapshots that would tell whether that round landed (and was compacted away "
                    "since) have expired: create a new writer. Commits that returned landed; rows of "
                    "commits that raised, and rows written since the last prepare_commit, are not in the table.")
            if gone:
                raise WriterStateLostError(
                    f"Writer of {table} cannot continue: rows it prepared in an earlier round are not "
                    f"in the table and their files are gone (e.g. {gone[0]}): that round's commit "
                    "failed or was aborted. Rows of every commit that raised or was aborted, and "
                    "rows written to this writer since its last prepare_commit, are not in the "
                    "table: close this writer, create a new one and write them again (commits that "
                    f"returned landed; {prepared}).")
            # A round's compaction lands right after its data, in the same commit (a retry of an
            # unknown outcome that finds the data landed commits nothing more): its data landed
            # without it, or its outputs deleted, and the compaction is lost.
            if outputs and ((rnd.rows and not rows) or any(not store.file_io.exists(p) for p in outputs.values())):
                outputs_lost = True
            elif rows or outputs:
                pending.append(_Round(rows, outputs))
        if outputs_lost and pending:
            raise WriterStateLostError(
                f"Writer of {table} cannot continue: an earlier round's inline compaction did not "
                "land while later rounds are not committed yet; commit the messages already "
                "prepared, then create a new writer for further rows (its rows since the last "
                "prepare_commit are not in the table: write them again).")
        self.rounds = [] if outputs_lost else pending
        return outputs_lost

    def _added_since(self, store: FileStore) -> set[str]:
        """Names of the data and index files added by the snapshots after `seen_snapshot` (every
        live one, when some of those snapshots expired)."""
        sm = store.snapshot_manager
        latest = sm.latest()
        if latest is None:
            return set()
        first = 1 if self.seen_snapshot is None else self.seen_snapshot + 1
        added: set[str] = set()
        self._blind = False
        scan = store.file_store_scan()
        index = store.index_entries(latest.index_manifest) if latest.index_manifest else []
        index_names = {e.file_name for e in index}
        for sid in range(first, latest.id + 1):
            snap = sm.try_snapshot(sid)
            if snap is None:  # expired meanwhile: what is live now is all that can be seen
                added = {e.file.file_name for e in scan.live_entries(latest)}
                self._blind = True
                break
            added |= {e.file.file_name for e in scan.delta_entries(snap) if e.kind == FileKind.ADD}
        self.seen_snapshot = latest.id
        return added | index_names

"""`PreparedNames`: the names of the files a writer's `prepare_commit` returned, kept only until
their commit is seen landed, so that a long-lived (streaming) writer holds a bounded set.

A writer's `abort` tells its own messages from another writer's by these names (`writer_abort`):
its own are looked up in the snapshots committed after its base, another's in everything
retained. A message seen landed needs neither: given to abort, it is taken as another writer's,
which keeps it as long as a retained snapshot, tag or changelog names one of its files (and once
none does, expiry has deleted what a landed snapshot removed). So its names are forgotten.

How it sees them land: once `LOOK_AT` messages are remembered, the snapshots committed since the
last look (at first: since the writer's base) are read as abort reads them (`landed_names`), and
the messages that landed are dropped. The next look waits until twice as many as were left are
remembered, so a committer that lags (or messages never committed) cost a look per doubling, not
per round. The last snapshot looked at (`seen`) also moves abort's own look forward: none of the
messages still remembered landed up to it (those prepared after a look landed after it).

A message that did not land is settled too once none of its files exists: no snapshot since the
writer's base added one, and none can now (a commit in flight for it must have ended before its
files are deleted, as for any abort). A driver that aborts a round through `TableCommitter.abort`
leaves such messages (the writer never hears of it); they are forgotten at the next look (an
existence check per message not landed, the first file found ending it), where before they stayed
for the writer's life. The writer's own `abort` forgets at once what it settled (`forget`): what it
deleted and what it found landed. Forgetting is safe either way: a forgotten message given to abort
again is taken as another writer's, the lookup that keeps more.

When snapshots since the last look expired (a writer between rounds longer than the retention),
the latest snapshot's live files stand in: a message one of whose files is live landed; one none
of whose files exists any more either landed and was compacted away and expired, or was aborted:
abort deletes nothing of it either way. Anything else is kept, and `seen` does not move (a kept
message may have landed in an expired snapshot and been compacted away by a retained one). A look
that cannot read metadata forgets nothing (the writer's round is not failed for it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Set
from typing import TYPE_CHECKING

from lake_assets.errors import CommitStateUnknownError, LakeError
from lake_assets.ops.commit_cleanup import written_paths
from lake_assets.ops.writer_abort import landed_names, message_files

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

LOOK_AT = 64  # messages remembered before the first look for landed ones


class PreparedNames:
    """The file names of a writer's prepared messages not seen landed (see the module docstring)."""

    def __init__(self) -> None:
        self._messages: list[tuple[CommitMessage, frozenset[str]]] = []
        self._counts: dict[str, int] = {}  # name -> remembered messages naming it (an upgrade re-names one)
        self.seen: int | None = None  # the latest snapshot looked at: none remembered landed up to it
        self._look_at = LOOK_AT

    @property
    def names(self) -> Set[str]:
        """The names remembered (what abort takes as its own)."""
        return self._counts.keys()

    def __len__(self) -> int:
        """Messages remembered."""
        return len(self._messages)

    def since(self, base: int | None) -> int | None:
        """Where abort's look for its own messages starts: after the writer's ``base`` (None: every
        snapshot), or after the last snapshot a look saw, if later."""
        if self.seen is None:
            return base
        return self.seen if base is None else max(base, self.seen)

    def record(self, store: FileStore, messages: Iterable[CommitMessage], base: int | None) -> None:
        """Remember the messages a `prepare_commit` returned; ``base`` is the writer's base (its
        first look starts after it). Once enough are remembered, forget those seen landed."""
        for m in messages:
            names = frozenset(message_files(m))
            if not names:
                continue
            self._messages.append((m, names))
            for n in names:
                self._counts[n] = self._counts.get(n, 0) + 1
        if len(self._messages) >= self._look_at:
            self._forget_landed(store, base)
            self._look_at = max(LOOK_AT, 2 * len(self._messages))

    def forget(self, messages: Iterable[CommitMessage]) -> None:
        """Forget ``messages`` (one remembered entry of the same files each): the writer's abort
        settled them, deleting their files or finding them landed."""
        settled: dict[frozenset[str], int] = {}
        for m in messages:
            names = frozenset(message_files(m))
            settled[names] = settled.get(names, 0) + 1
        kept: list[tuple[CommitMessage, frozenset[str]]] = []
        for entry in self._messages:
            if settled.get(entry[1], 0) > 0:
                settled[entry[1]] -= 1
                self._drop_names(entry[1])
            else:
                kept.append(entry)
        self._messages = kept

    def _drop_names(self, names: frozenset[str]) -> None:
        for n in names:
            left = self._counts[n] - 1
            if left:
                self._counts[n] = left
            else:
                del self._counts[n]

    def _forget_landed(self, store: FileStore, base: int | None) -> None:
        names = [n for _, n in self._messages]
        try:
            try:
                landed, seen = landed_names(store, names, self.since(base))
                # not landed up to the latest snapshot and no file left: aborted, it can never land
                landed = [done or not self._any_file_exists(store, m)
                          for (m, _), done in zip(self._messages, landed, strict=True)]
            except CommitStateUnknownError:  # a snapshot since the last look expired
                landed, seen = self._landed_by_latest(store), self.seen
        except (OSError, LakeError) as exc:
            log.debug("Writer of %s keeps every prepared file name for now: %r", store.name, exc)
            return
        kept: list[tuple[CommitMessage, frozenset[str]]] = []
        for entry, done in zip(self._messages, landed, strict=True):
            if done:
                self._drop_names(entry[1])
            else:
                kept.append(entry)
        self._messages = kept
        self.seen = seen

    @staticmethod
    def _any_file_exists(store: FileStore, message: CommitMessage) -> bool:
        return any(store.file_io.exists(p) for p in written_paths(store, [message]))

    def _landed_by_latest(self, store: FileStore) -> list[bool]:
        """Whether each message landed as far as the latest snapshot shows it: a file of it live
        there, or none of its files left (see the module docstring). `seen` stays: a message kept
        may have landed in an expired snapshot and been compacted away by a retained one."""
        latest = store.snapshot_manager.latest()
        if latest is None:
            return [False] * len(self._messages)
        live = {e.file.file_name for e in store.file_store_scan().live_entries(latest)}
        if latest.index_manifest:
            live |= {e.file_name for e in store.index_entries(latest.index_manifest)}
        return [not names.isdisjoint(live) or not self._any_file_exists(store, m) for m, names in self._messages]


__all__ = ["LOOK_AT", "PreparedNames"]

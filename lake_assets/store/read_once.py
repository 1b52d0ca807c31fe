"""Each snapshot file read at most once per operation.

On an object store every read is a billed request with a round trip, and one maintenance run reads
the same snapshots several times: expiry reads the candidates for their commit times, then the
expired ones for their files, then the new earliest one to keep. Snapshot and changelog files are
immutable while they exist (a writer creates each once; a copy to ``changelog/`` rewrites the same
bytes), so within one operation a second read would return what the first did.

Not across operations: a rollback deletes snapshot files whose ids the next commits take again,
so ``snapshot-<id>`` names different content over time. The cache lives from `reads_once`'s start to
its end, in the thread that runs it (a context variable: worker threads the operation starts read
for themselves), and holds what was read, never an absence: a snapshot not there yet may be
committed meanwhile. Hints (LATEST, EARLIEST) and listings are never cached: they change.
Manifests and manifest lists are cached process-wide by `lake_assets.store.manifest_io`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from lake_assets.spec.snapshot import Snapshot

_READS: ContextVar[dict[tuple[str, str], Snapshot] | None] = ContextVar("lake_assets_snapshot_reads", default=None)

P = ParamSpec("P")
R = TypeVar("R")


@contextlib.contextmanager
def operation_reads() -> Iterator[None]:
    """Within, `read_snapshot_file` reads each snapshot and changelog file once (nested: the
    outermost operation's cache)."""
    if _READS.get() is not None:
        yield
        return
    token = _READS.set({})
    try:
        yield
    finally:
        _READS.reset(token)


def reads_once(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` as one operation for `operation_reads`."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with operation_reads():
            return fn(*args, **kwargs)

    return run


def cached(protocol: str, path: str) -> Snapshot | None:
    """The snapshot this operation read from ``path`` already, or None."""
    reads = _READS.get()
    return None if reads is None else reads.get((protocol, path))


def remember(protocol: str, path: str, snapshot: Snapshot) -> None:
    """Keep what was read from ``path`` until the operation ends (nothing outside one)."""
    reads = _READS.get()
    if reads is not None:
        reads[(protocol, path)] = snapshot


def forget(protocol: str, path: str) -> None:
    """Drop ``path`` (this operation deleted the file: a later commit may take its name)."""
    reads = _READS.get()
    if reads is not None:
        reads.pop((protocol, path), None)

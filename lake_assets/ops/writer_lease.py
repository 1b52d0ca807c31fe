"""A long-lived cross-partition writer's lease on the snapshots its key index needs.

A cross-partition upsert writer keeps its key index across commits (ops/key_index_race.py): its
commits check the snapshots from its key-index base on (a rollback, another writer's keys, its own
rounds landing), so an expiry of those snapshots used to fail the writer's next commit ("create a
new writer"), e.g. when another user's commit stopped its base moving and expiry ran meanwhile.

Paimon's mechanism for a process that needs snapshots from some id on is the consumer: expiry
(Java's ``ExpireSnapshotsImpl``, 0.9 to HEAD, and ours) never expires a snapshot at or after a
consumer's ``nextSnapshot``. So the writer holds its base as a consumer ``lake-writer-<uuid>``,
written before its key index is read and moved with its base. A plain consumer would pin the
snapshots forever once its writer crashed; the lease ends instead: the file also carries
``lakeAssetsLeaseUntil`` (epoch ms, `Consumer.lease_until_ms`), the time of its last renewal
plus the lease, which is ``consumer.expiration-time`` when the table sets it (Java's idle-consumer
expiry then drops it at the same age) and ``snapshot.time-retained`` otherwise (the retention the
table gives everything in flight). The writer renews it whenever its base moves, and at a write
once half of it has passed; `close` deletes it. A lease past its end pins nothing here: our
expiry leaves it out and deletes it, and every new cross-partition writer deletes such leases
when it starts. Java's expiry ignores the unknown field (``@JsonIgnoreProperties(ignoreUnknown =
true)`` on Paimon's ``Consumer``) and keeps a lease's snapshots like a reader's position. Java
removes consumers only in its commit's expiry with ``consumer.expiration-time`` set, by the file's
modification time (each renewal rewrites the file, so that is when the lease ends for us too);
where only Java expires a table without the option, a crashed writer's lease pins them until one
of ours runs (no field of the file can change that), and our health observation reports it.

A writer idle for longer than the lease loses its protection: its snapshots may expire, and its
next commit then fails as before, telling to create a new writer.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError, SnapshotNotFoundError

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# Consumer ids of writer leases (the rest: a new UUID per writer)
LEASE_PREFIX = "lake-writer-"


def lease_duration_ms(store: FileStore) -> int:
    """How long a writer lease holds after its renewal: ``consumer.expiration-time``, else
    ``snapshot.time-retained`` (see the module doc)."""
    opts = store.schema.core_options
    expiration = opts.consumer_expiration_ms
    return opts.snapshot_time_retained_ms if expiration is None else expiration


def _now_ms() -> int:
    return int(time.time() * 1000)


class WriterLease:
    """One writer's lease (see the module doc): `hold` the snapshots from an id on, `renew`,
    `release`."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.consumer_id = LEASE_PREFIX + uuid.uuid4().hex
        self.duration_ms = lease_duration_ms(store)
        self.next_snapshot: int | None = None  # what the lease holds from (None: not held)
        self.renewed_ms = 0

    def start(self, snapshot_id: int) -> None:
        """Delete leases of other writers that ran out, then hold from ``snapshot_id`` (0: an empty
        table, held from 1). Raises `SnapshotNotFoundError` when an expiry is removing it."""
        # housekeeping only: a consumer file that cannot be read fails the table's expiry, by name,
        # not this write
        with contextlib.suppress(CorruptMetadataError):
            self.store.consumer_manager().drop_lapsed_leases()
        try:
            self._record(snapshot_id)
        except SnapshotNotFoundError:
            raise SnapshotNotFoundError(
                f"Cannot write to {self.store.name}: snapshot {snapshot_id}, which this cross-partition writer "
                "reads its key index from, is being expired; write again (a new writer reads the latest "
                "snapshot)") from None

    def renew(self, snapshot_id: int) -> None:
        """Hold from ``snapshot_id`` on where the lease holds from another id or half of it has
        passed. An expiry already removing snapshots below ``snapshot_id`` (the lease ran out)
        leaves it as it was: the writer's commit check then finds what expired."""
        if snapshot_id == self.next_snapshot and _now_ms() - self.renewed_ms < self.duration_ms // 2:
            return
        with contextlib.suppress(SnapshotNotFoundError):
            self._record(snapshot_id)

    def _record(self, snapshot_id: int) -> None:
        now = _now_ms()
        held = max(snapshot_id, 1)
        self.store.consumer_manager().record(self.consumer_id, held, now + self.duration_ms)
        self.next_snapshot, self.renewed_ms = held, now

    def release(self) -> None:
        """Delete the lease (the writer is done)."""
        if self.next_snapshot is None:
            return
        self.next_snapshot = None
        with contextlib.suppress(FileNotFoundError):
            self.store.consumer_manager().delete(self.consumer_id)

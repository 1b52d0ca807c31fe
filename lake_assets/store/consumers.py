"""Consumers: a streaming reader's saved position (``consumer/consumer-<id>``: next snapshot), and
the leases of long-lived writers kept as consumers (ops/writer_lease.py), which hold until their
``lakeAssetsLeaseUntil`` only.

Both are consumer files to Paimon (Java's ``$consumers`` system table and ``ConsumerManager``
list a lease as one more consumer: its listing cannot change). Ours tells them apart:
`consumers` lists every one (expiry must see all), `readers` the readers' positions,
`writer_leases` the leases, each with whether it ran out (`LeaseState`): a lease that ran out is
a writer that crashed or stopped without closing; it pins nothing for lake_assets' expiry, but
Java's expiry keeps its snapshots unless the table sets ``consumer.expiration-time``."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from lake_assets.catalog_names import check_name
from lake_assets.errors import SnapshotNotFoundError
from lake_assets.io.file_io import FileIO
from lake_assets.paths import TablePaths, list_prefixed
from lake_assets.spec.snapshot import Consumer
from lake_assets.store.snapshot_manager import SnapshotManager

_CONSUMER_PREFIX = "consumer-"


@dataclass(frozen=True)
class LeaseState:
    """A writer lease as listed: the snapshot it holds from, its end (epoch ms) and whether it ran
    out at the time of listing (its writer crashed or stopped without closing)."""

    next_snapshot: int
    lease_until_ms: int
    expired: bool


def lease_states(consumers: dict[str, Consumer], now_ms: int | None = None) -> dict[str, LeaseState]:
    """The writer leases among listed ``consumers``, each expired or not at ``now_ms`` (now)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return {cid: LeaseState(c.next_snapshot, c.lease_until_ms, c.lapsed(now_ms))
            for cid, c in consumers.items() if c.lease_until_ms is not None}


def min_position(consumers: dict[str, Consumer], now_ms: int | None = None) -> int | None:
    """The lowest position of ``consumers``, leases that ran out before ``now_ms`` (now) left out."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    positions = [c.next_snapshot for c in consumers.values() if not c.lapsed(now_ms)]
    return min(positions) if positions else None


class ConsumerManager:
    """Reads and writes consumer positions; expiry keeps every snapshot a live consumer needs."""

    def __init__(self, file_io: FileIO, paths: TablePaths) -> None:
        self.file_io = file_io
        self.paths = paths

    def consumers(self) -> dict[str, Consumer]:
        """Every consumer's position. Expiry keeps what they need, so none may be missed: an id
        another engine wrote with a character `record` refuses is read through its listed path,
        and an entry that cannot be read as a consumer raises (see `paths.list_prefixed`)."""
        out = {}
        for cid, path, _ in list_prefixed(self.file_io, self.paths.consumer_dir, _CONSUMER_PREFIX, "consumer"):
            try:
                out[cid] = Consumer.from_json(self.file_io.read_bytes(path), f"{_CONSUMER_PREFIX}{cid}")
            except FileNotFoundError:
                continue  # deleted while listing
        return out

    def readers(self) -> dict[str, Consumer]:
        """The readers' positions: every consumer but the writer leases."""
        return {cid: c for cid, c in self.consumers().items() if not c.is_writer_lease}

    def writer_leases(self, now_ms: int | None = None) -> dict[str, LeaseState]:
        """The long-lived writers' leases (ops/writer_lease.py), each expired or not at ``now_ms``."""
        return lease_states(self.consumers(), now_ms)

    def get(self, consumer_id: str) -> Consumer | None:
        check_name(consumer_id, "consumer id")
        try:
            return Consumer.from_json(self.file_io.read_bytes(self.paths.consumer_file(consumer_id)),
                                     f"{_CONSUMER_PREFIX}{consumer_id}")
        except FileNotFoundError:
            return None

    def record(self, consumer_id: str, next_snapshot: int, lease_until_ms: int | None = None) -> None:
        """Save the position: the next snapshot this consumer will read (with ``lease_until_ms``:
        a writer's lease, held until then).

        A position below an expiration in progress is withdrawn (the previous one restored) and
        raises `SnapshotNotFoundError`: that expiration may not have seen it (SnapshotManager's
        expiry handshake: publish first, then look for expiry markers).
        """
        check_name(consumer_id, "consumer id")
        path = self.paths.consumer_file(consumer_id)
        try:
            previous: bytes | None = self.file_io.read_bytes(path)
        except FileNotFoundError:
            previous = None
        self.file_io.overwrite_atomic(path, Consumer(next_snapshot, lease_until_ms).to_json().encode())
        try:
            below = SnapshotManager(self.file_io, self.paths).expiring_below()
            if below is not None and next_snapshot < below:
                raise SnapshotNotFoundError(
                    f"Cannot record consumer {consumer_id!r} at snapshot {next_snapshot}: snapshots below "
                    f"{below} are being expired"
                )
        except BaseException:
            with contextlib.suppress(Exception):
                if previous is None:
                    self.file_io.delete(path)
                else:
                    self.file_io.overwrite_atomic(path, previous)
            raise

    def delete(self, consumer_id: str) -> None:
        check_name(consumer_id, "consumer id")
        self.file_io.delete(self.paths.consumer_file(consumer_id))

    def min_next_snapshot(self, now_ms: int | None = None) -> int | None:
        """The lowest position of the consumers, leases that ran out before ``now_ms`` left out."""
        return min_position(self.consumers(), now_ms)

    def drop_lapsed_leases(self, now_ms: int | None = None) -> list[str]:
        """Delete the writer leases that ran out before ``now_ms`` (their writers crashed, or
        stopped without closing); returns their ids. Reader positions are left alone."""
        return self._drop_lapsed(now_ms)[0]

    def drop_lapsed_leases_listing(self, now_ms: int | None = None) -> dict[str, Consumer]:
        """`drop_lapsed_leases`, returning the consumers it left, as its one listing found them
        (expiry plans on them: a consumer recorded since is seen by its re-read after its marker)."""
        return self._drop_lapsed(now_ms)[1]

    def _drop_lapsed(self, now_ms: int | None) -> tuple[list[str], dict[str, Consumer]]:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        lapsed = []
        kept = {}
        for cid, path, _ in list_prefixed(self.file_io, self.paths.consumer_dir, _CONSUMER_PREFIX, "consumer"):
            try:
                consumer = Consumer.from_json(self.file_io.read_bytes(path), f"{_CONSUMER_PREFIX}{cid}")
            except FileNotFoundError:
                continue
            if consumer.lapsed(now_ms):
                self.file_io.delete(path)
                lapsed.append(cid)
            else:
                kept[cid] = consumer
        return lapsed, kept

    def expire(self, expiration_ms: int, now_ms: int | None = None) -> list[str]:
        """Delete consumers not updated for ``expiration_ms`` (abandoned readers); returns their ids."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        removed = []
        for cid, path, st in list_prefixed(self.file_io, self.paths.consumer_dir, _CONSUMER_PREFIX, "consumer"):
            if st.modified_ms is not None and now_ms - st.modified_ms > expiration_ms:
                self.file_io.delete(path)
                removed.append(cid)
        return removed

"""Consumers: a streaming reader's saved position (``consumer/consumer-<id>``: next snapshot)."""

from __future__ import annotations

import time

from lake_assets.catalog_names import check_name
from lake_assets.errors import CorruptMetadataError, UnsafePathError
from lake_assets.io.file_io import FileIO
from lake_assets.paths import TablePaths, check_file_name
from lake_assets.spec.snapshot import Consumer

_CONSUMER_PREFIX = "consumer-"


def _consumer_id(file_name: str) -> str | None:
    """The consumer id of a ``consumer-<id>`` file name (None for other files, e.g. temporaries).

    A ``consumer-`` file whose name is not a plain file name is damaged metadata: raise rather
    than skip it, since expiry would otherwise delete snapshots that consumer still needs."""
    if not file_name.startswith(_CONSUMER_PREFIX) or file_name == _CONSUMER_PREFIX:
        return None
    try:
        check_file_name(file_name, "consumer")
    except UnsafePathError as exc:
        raise CorruptMetadataError(
            f"Cannot interpret consumer file {file_name!r} ({exc}); "
            "refusing to go on without knowing which snapshots it needs"
        ) from None
    return file_name[len(_CONSUMER_PREFIX):]


class ConsumerManager:
    """Reads and writes consumer positions; expiry keeps every snapshot a live consumer needs."""

    def __init__(self, file_io: FileIO, paths: TablePaths) -> None:
        self.file_io = file_io
        self.paths = paths

    def consumers(self) -> dict[str, Consumer]:
        out = {}
        for name in self.file_io.list_names(self.paths.consumer_dir):
            cid = _consumer_id(name)
            if cid is None:
                continue
            try:
                out[cid] = Consumer.from_json(self.file_io.read_bytes(self.paths.consumer_file(cid)), name)
            except FileNotFoundError:
                continue
        return out

    def get(self, consumer_id: str) -> Consumer | None:
        check_name(consumer_id, "consumer id")
        try:
            return Consumer.from_json(self.file_io.read_bytes(self.paths.consumer_file(consumer_id)), consumer_id)
        except FileNotFoundError:
            return None

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Save the position: the next snapshot this consumer will read."""
        check_name(consumer_id, "consumer id")
        self.file_io.overwrite_atomic(self.paths.consumer_file(consumer_id), Consumer(next_snapshot).to_json().encode())

    def delete(self, consumer_id: str) -> None:
        check_name(consumer_id, "consumer id")
        self.file_io.delete(self.paths.consumer_file(consumer_id))

    def min_next_snapshot(self) -> int | None:
        positions = [c.next_snapshot for c in self.consumers().values()]
        return min(positions) if positions else None

    def expire(self, expiration_ms: int, now_ms: int | None = None) -> list[str]:
        """Delete consumers not updated for ``expiration_ms`` (abandoned readers); returns their ids."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        removed = []
        for st in self.file_io.list_status(self.paths.consumer_dir):
            name = st.path.rstrip("/").rsplit("/", 1)[-1]
            cid = _consumer_id(name)
            if cid is not None and st.modified_ms is not None and now_ms - st.modified_ms > expiration_ms:
                self.file_io.delete(self.paths.consumer_file(cid))
                removed.append(cid)
        return removed

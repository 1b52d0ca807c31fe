"""A cross-partition writer's key index handed to a writer in another process through a local
directory: the next micro-batch of a streaming write, run by whichever Python worker is free.

`save` moves the index's entries (`KeyIndex.save`: its shard files, or its in-memory entries as
one Arrow file) into the directory and writes the router's state beside them (``state.json``:
the base snapshot and its identity, the rounds not seen landed, the bucket counts, the partitions
of the ids, the lease); `load` makes a router of it in this process, holding the same lease. The
directory is then the new router's business (the caller removes it). Nothing here trusts the
directory to be current: the adopting writer checks the table holds exactly what the index says
(`CrossPartitionRouter.resume`).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from lake_assets.ops.cross_partition import CrossPartitionRouter
from lake_assets.ops.writer_lease import LEASE_PREFIX, WriterLease

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

_STATE = "state.json"


def save(router: CrossPartitionRouter, directory: str) -> None:
    """Hand ``router``'s index and state over into ``directory`` (empty, local); the router is
    left empty, its lease no longer its own (closing it removes nothing the directory needs)."""
    shards = router.index.save(directory)
    lease = router.lease
    state = {
        "table": router.store.paths.meta_root, "schema_id": router.store.schema.id,
        "base_snapshot": router.base_snapshot, "base_identity": router.base_identity,
        "pending": list(router.pending), "shards": shards,
        "partitions": [p.hex() for p in router.index.partitions],
        "counts": {str(p): {str(b): c for b, c in counts.items()} for p, counts in router.counts.items()},
        "lease": {"consumer_id": lease.consumer_id, "next_snapshot": lease.next_snapshot,
                  "renewed_ms": lease.renewed_ms},
    }
    with open(os.path.join(directory, _STATE), "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    lease.next_snapshot = None  # handed over: the router's close must not delete it
    router.close()


def load(store: FileStore, directory: str, spill_dir: str | None) -> CrossPartitionRouter | None:
    """The router `save` left in ``directory`` for ``store``'s table and schema (None: another
    table or schema, or not a handed-over index); its shard files move into ``spill_dir``."""
    try:
        with open(os.path.join(directory, _STATE), encoding="utf-8") as fh:
            state = json.load(fh)
        consumer_id = str(state["lease"]["consumer_id"])
        if (state["table"] != store.paths.meta_root or state["schema_id"] != store.schema.id
                or not consumer_id.startswith(LEASE_PREFIX)):
            return None
        lease = WriterLease(store)
        lease.consumer_id = consumer_id
        held = state["lease"]["next_snapshot"]
        lease.next_snapshot = None if held is None else _int(held)
        lease.renewed_ms = _int(state["lease"]["renewed_ms"])
        partitions = [bytes.fromhex(p) for p in state["partitions"]]
        router = CrossPartitionRouter(store, None, spill_dir, lease=lease)
        try:
            router.base_snapshot = _int(state["base_snapshot"])
            router.base_identity = str(state["base_identity"])
            router.pending = tuple(str(x) for x in state["pending"])
            router.counts = {_int(p, len(partitions) - 1): {_int(b): _int(c) for b, c in counts.items()}
                             for p, counts in state["counts"].items()}
            router.index.load(directory, _int(state["shards"]), partitions)
        except BaseException:
            router.close()
            raise
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not a complete handoff: the writer reads its index from the table
    return router


def _int(value: object, most: int = 2**63 - 1) -> int:
    """A non-negative integer of the state (its JSON int or decimal text), at most ``most``;
    anything else raises ValueError (the handoff is then not used)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{value!r:.40} in a key index handoff")
    number = int(value)
    if not 0 <= number <= most:
        raise ValueError(f"{number} in a key index handoff")
    return number

"""Key indexes of cross-partition upsert tables kept across the micro-batches of a streaming write.

A streaming query writes each micro-batch with a new `TableWriter` in a Spark task, and every such
writer of a cross-partition table read its key index from the table again: every key of the
table, each micro-batch. Paimon's Flink writer keeps its index (RocksDB) for the job's life. Here
the Python worker that ran a micro-batch keeps its writer's index (`TableWriter.detach_key_index`)
under (table, commit user: ``spark-<query id>``), and the query's next micro-batch in that worker
takes it (`TableWriter.adopt_key_index`) if the table holds exactly what the index says: its
commit landed and nothing but the query's own commits and compactions came since (checked by
snapshot identity, `CrossPartitionRouter.resume`); else that writer reads the index from the
table as before. A micro-batch in another worker reads it from the table, which is always right.

A kept index holds its memory (half of ``write-buffer-size`` at most), its spill files and its
lease (ops/writer_lease.py) while it waits: at most `MAX_KEPT` are kept per worker (the oldest is
closed first), and all are closed when the worker exits; a worker killed leaves a lease that runs
out by itself.
"""

from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lake_assets.ops.cross_partition import CrossPartitionRouter
    from lake_assets.table import Table

# Key indexes a worker keeps at most (one per streaming query writing a cross-partition table)
MAX_KEPT = 2

_kept: OrderedDict[tuple[str, str], CrossPartitionRouter] = OrderedDict()
_lock = threading.Lock()


def _key(table: Table, commit_user: str) -> tuple[str, str]:
    return table.store.paths.root, commit_user


def take(table: Table, commit_user: str) -> CrossPartitionRouter | None:
    """The key index kept for ``commit_user``'s writes to ``table``, no longer kept (None: none)."""
    with _lock:
        return _kept.pop(_key(table, commit_user), None)


def keep(table: Table, commit_user: str, router: CrossPartitionRouter) -> None:
    """Keep ``router`` for the next writer of ``commit_user`` on ``table`` (closing the oldest
    kept index past `MAX_KEPT`)."""
    with _lock:
        _kept[_key(table, commit_user)] = router
        evicted = [_kept.popitem(last=False)[1] for _ in range(len(_kept) - MAX_KEPT)]
    for old in evicted:
        old.close()


@atexit.register
def close_all() -> None:
    """Close every kept index (its spill files and lease)."""
    with _lock:
        routers = list(_kept.values())
        _kept.clear()
    for router in routers:
        router.close()

"""Key indexes of cross-partition upsert tables kept across the micro-batches of a streaming write.

A streaming query writes each micro-batch with a new `TableWriter` in a Spark task, and every such
writer of a cross-partition table read its key index from the table again: every key of the
table, each micro-batch. Paimon's Flink writer keeps its index (RocksDB) for the job's life. Here
the task that wrote a micro-batch hands its writer's index (`TableWriter.detach_key_index`) to the
executor's local disk (`ops/key_index_handoff.py`), in a directory named after the table and the
commit user (``spark-<query id>``), and the query's next micro-batch takes it from there, in
whichever Python worker of the executor runs it (Spark hands tasks to its idle workers in turn,
so an index kept in one worker's memory would mostly miss), and adopts it
(`TableWriter.adopt_key_index`) if the table holds exactly what the index says: its rounds landed
and nothing but compactions came since (`CrossPartitionRouter.resume`); else that writer reads
the index from the table as before, as does a micro-batch on another executor.

The directory lives under ``LAKE_ASSETS_SPILL_DIR``, else the first of Spark's local directories
(deleted with the executor), else the system temp directory; a task takes it by renaming it, so
two tasks never share one. A query that stops leaves its last index there (half of
``write-buffer-size`` at most in memory-sized files, or its spilled shards) and its lease, which
runs out by itself (ops/writer_lease.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import uuid
from typing import TYPE_CHECKING

from lake_assets.ops import key_index_handoff
from lake_assets.ops.spill import SPARK_LOCAL_DIRS_ENV, SPILL_DIR_ENV

if TYPE_CHECKING:
    from lake_assets.ops.cross_partition import CrossPartitionRouter
    from lake_assets.table import Table


def handoff_root() -> str:
    """Where handed-over indexes live: the same directory for every worker of an executor."""
    configured = os.environ.get(SPILL_DIR_ENV, "").strip()
    if configured and os.path.isdir(configured):
        return configured
    listed = os.environ.get(SPARK_LOCAL_DIRS_ENV, "").split(",")
    spark_dirs = sorted(d for d in listed if d.strip() and os.path.isdir(d))
    return spark_dirs[0] if spark_dirs else tempfile.gettempdir()


def _directory(table: Table, commit_user: str) -> str:
    digest = hashlib.sha256(f"{table.store.paths.root}\0{commit_user}".encode()).hexdigest()[:32]
    return os.path.join(handoff_root(), f"lake-key-index-{digest}")


def take(table: Table, commit_user: str, spill_dir: str | None) -> CrossPartitionRouter | None:
    """The key index handed over for ``commit_user``'s writes to ``table``, no longer kept there
    (None: none, or not for this table and schema)."""
    kept = _directory(table, commit_user)
    claimed = f"{kept}.taken-{uuid.uuid4().hex}"
    try:
        os.rename(kept, claimed)  # one taker only
    except OSError:
        return None
    try:
        return key_index_handoff.load(table.store, claimed, spill_dir)
    finally:
        shutil.rmtree(claimed, ignore_errors=True)


def keep(table: Table, commit_user: str, router: CrossPartitionRouter) -> None:
    """Hand ``router`` over for the next writer of ``commit_user`` on ``table`` (replacing an
    index kept before). A failure to (a full local disk) closes it instead: the next micro-batch
    then reads its index from the table, and the micro-batch written stands."""
    kept = _directory(table, commit_user)
    staging = tempfile.mkdtemp(prefix=os.path.basename(kept) + ".new-", dir=os.path.dirname(kept))
    try:
        key_index_handoff.save(router, staging)
        with contextlib.suppress(FileNotFoundError):
            stale = f"{kept}.stale-{uuid.uuid4().hex}"
            os.rename(kept, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(staging, kept)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        router.close()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        router.close()
        raise

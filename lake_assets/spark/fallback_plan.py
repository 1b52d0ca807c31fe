"""The Spark source's batch read of a table carrying ``scan.fallback-branch``.

The core decides what such a read holds (`lake_assets.ops.fallback_read`): the table's own splits,
then the fallback branch's splits of the partitions the table's branch has no live file in. Here
both are planned in the driver and packed into Spark partitions separately; a partition of the
fallback's splits names the branch and the schema it was planned with, so that the task reading
it opens that branch and reads with that schema (its merge engine and options, not the table's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops.fallback_read import Travel, fallback_branch, fallback_splits, open_branch, open_fallback
from lake_assets.ops.plan import to_epoch_ms
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.file_store import FileStore
from lake_assets.table import Table

if TYPE_CHECKING:
    from lake_assets.ops.scan import Split
    from lake_assets.spark.source_options import SourceOptions


def has_fallback(table: Table) -> bool:
    """Whether reads of ``table`` add a fallback branch's partitions."""
    return fallback_branch(table.schema) is not None


def plan_fallback(table: Table, options: SourceOptions, snap: Snapshot | None,
                  filters: Any) -> tuple[list[Split], Table | None, Snapshot | None, list[Split]]:
    """(the table's own splits, the fallback branch as a table on the schema it is read with, its
    snapshot, its splits) of a batch read as of ``snap`` (chosen by ``options``' time travel)."""
    from lake_assets.ops import postpone_merge_read

    if postpone_merge_read.configured(table.schema):
        raise UnsupportedFeatureError(f"Cannot read {table.name}: lake_assets does not combine "
                                      "postpone.merge-on-read with scan.fallback-branch")
    travel = options.time_travel()
    stamp = travel.get("timestamp")
    source = open_fallback(table.store, table.schema, snap,
                           Travel(travel.get("snapshot_id"), travel.get("tag"),
                                  None if stamp is None else to_epoch_ms(stamp)))
    own = [] if snap is None else table.plan(snapshot=snap, filter=filters)
    if source is None:
        return own, None, None, []
    extra = fallback_splits(table.store, snap, table.schema, source, filters, None if filters else own)
    store = source.store
    fallback = Table(store.name, store.file_io, store.paths.root, source.schema, branch=store.paths.branch)
    return own, fallback, source.snapshot, extra


def fallback_read_store(table: Table, branch: str, schema_id: int) -> tuple[FileStore, TableSchema]:
    """In a task: the fallback ``branch`` of ``table`` and the schema its splits were planned with
    (an older one with the branch's current options, as a time travel reads)."""
    store = open_branch(table.store, branch)
    if schema_id == store.schema.id:
        return store, store.schema
    pinned = store.schema_by_id(schema_id)
    return store, (pinned.with_options(dict(store.schema.options)) if pinned.id < store.schema.id else pinned)


__all__ = ["fallback_read_store", "has_fallback", "plan_fallback"]

"""What an OVERWRITE commit replaces: the `Overwrite` spec (all live files, or those of matching
partitions), its forms from `Table.write_arrow`'s argument and Paimon's dynamic overwrite (the
partitions the writer wrote), and the DELETE entries it adds to a commit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets.errors import SchemaError
from lake_assets.lsm.key_compare import values_equal
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.binary_row import deserialize_row, serialize_row
from lake_assets.spec.manifest import FileKind, ManifestEntry

if TYPE_CHECKING:
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore

PartitionMatcher = Callable[[tuple[Any, ...]], bool]


@dataclass(frozen=True)
class Overwrite:
    """Which live files an OVERWRITE commit replaces: all of them, or those whose partition matches."""

    matcher: PartitionMatcher | None = None  # None = the whole table
    # Only files of real buckets (a postpone table's rescale keeps its `bucket-postpone` files, as
    # Paimon's overwrite with a positive table bucket does).
    real_buckets_only: bool = False
    # Run against every snapshot the commit is about to replace from (each retry): raises
    # `CommitConflictError` when the overwrite must not land on it (Paimon's strict mode,
    # ``commit.strict-mode.last-safe-snapshot``; `lake_assets.ops.rescale`).
    check: Callable[[Snapshot | None], None] | None = None

    def matches(self, values: tuple[Any, ...]) -> bool:
        """Whether the partition with these values is replaced."""
        return self.matcher is None or self.matcher(values)


def overwritten_entries(store: FileStore, latest: Snapshot | None, overwrite: Overwrite) -> list[ManifestEntry]:
    """DELETE entries for every live file of ``latest`` that ``overwrite`` replaces (after its
    `Overwrite.check` of ``latest``)."""
    if overwrite.check is not None:
        overwrite.check(latest)
    if latest is None:
        return []
    live = store.file_store_scan().live_entries(latest, partition_filter=overwrite.matcher)
    if overwrite.real_buckets_only:
        live = [e for e in live if e.bucket >= 0]
    return [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in live]


def dynamic_overwrite(store: FileStore, messages: Sequence[CommitMessage]) -> Overwrite | None:
    """Replace exactly the partitions the messages wrote (None: nothing written, nothing replaced).

    An unpartitioned table has one partition: it is replaced whole, as in Paimon.
    """
    if not store.partition_keys:
        return Overwrite(None)
    written = {m.partition for m in messages if not m.is_empty()}
    if not written:
        return None
    types = store.schema.types(list(store.partition_keys))

    def matcher(values: tuple[Any, ...]) -> bool:
        # compare the binary form: it is what the messages carry, and NaN or -0.0 compare oddly
        return serialize_row(list(values), types) in written

    return Overwrite(matcher)


def overwrite_of_whole_table(store: FileStore, messages: Sequence[CommitMessage]) -> Overwrite | None:
    """What ``overwrite=True`` (no partition named) replaces, per ``dynamic-partition-overwrite``.

    Paimon's default (true) replaces only the partitions present in the new data, and nothing when
    there is none; false replaces the whole table.
    """
    if store.schema.core_options.dynamic_partition_overwrite:
        return dynamic_overwrite(store, messages)
    return Overwrite(None)


def overwrite_spec(store: FileStore, overwrite: bool | dict[str, str]) -> Overwrite | None:
    """The `Overwrite` of `Table.write_arrow`'s ``overwrite`` argument (None: no overwrite); a dict
    of partition values matches those partitions (`values_equal`: as Paimon's predicates compare)."""
    if overwrite is False or overwrite is None:
        return None
    if overwrite is True or overwrite == {}:
        return Overwrite(None)
    if not isinstance(overwrite, dict):
        raise SchemaError(f"overwrite must be a bool or a dict of partition values, got {overwrite!r}")
    keys = list(store.schema.partition_keys)
    wanted: dict[int, Any] = {}
    for k, v in overwrite.items():
        if k not in keys:
            raise SchemaError(f"Cannot overwrite {store.name}: {k!r} is not a partition key (keys: {keys})")
        t = to_arrow(store.schema.field(k).type)
        try:
            wanted[keys.index(k)] = None if v is None else pa.scalar(v).cast(t).as_py()
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as exc:
            # OverflowError: an int too large for any Arrow integer (pa.scalar raises it as is)
            raise SchemaError(f"Cannot overwrite {store.name}: {k}={v!r} is not a {t}: {exc}") from exc

    def matcher(values: tuple[Any, ...]) -> bool:
        # float partitions match as Paimon's partition predicate does (Double.compare):
        # NaN matches NaN, and -0.0 is another partition than 0.0
        return all(values_equal(values[i], v) for i, v in wanted.items())

    return Overwrite(matcher)


def check_inside_partition(store: FileStore, messages: list[CommitMessage], ow: Overwrite | None) -> None:
    """Refuse messages with rows outside the partitions ``ow`` replaces (a message without files
    adds no rows anywhere)."""
    if ow is None:
        return
    types = store.schema.types(list(store.schema.partition_keys))
    for m in messages:
        values = tuple(deserialize_row(m.partition, types))
        if not m.is_empty() and not ow.matches(values):
            raise SchemaError(
                f"Cannot overwrite {store.name}: input has rows in partition "
                f"{dict(zip(store.schema.partition_keys, values, strict=True))} outside the overwritten one"
            )

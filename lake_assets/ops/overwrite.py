"""Which partitions an overwrite replaces when the writer names none (Paimon's dynamic overwrite)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.ops.commit import Overwrite
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.binary_row import serialize_row

if TYPE_CHECKING:
    from lake_assets.table import Table


def dynamic_overwrite(table: Table, messages: Sequence[CommitMessage]) -> Overwrite | None:
    """Replace exactly the partitions the messages wrote (None: nothing written, nothing replaced).

    An unpartitioned table has one partition: it is replaced whole, as in Paimon.
    """
    if not table.partition_keys:
        return Overwrite(None)
    written = {m.partition for m in messages if not m.is_empty()}
    if not written:
        return None
    types = table.schema.types(list(table.partition_keys))

    def matcher(values: tuple) -> bool:
        # compare the binary form: it is what the messages carry, and NaN or -0.0 compare oddly
        return serialize_row(list(values), types) in written

    return Overwrite(matcher)


def overwrite_of_whole_table(table: Table, messages: Sequence[CommitMessage]) -> Overwrite | None:
    """What ``overwrite=True`` (no partition named) replaces, per ``dynamic-partition-overwrite``.

    Paimon's default (true) replaces only the partitions present in the new data, and nothing when
    there is none; false replaces the whole table.
    """
    if table.schema.core_options.dynamic_partition_overwrite:
        return dynamic_overwrite(table, messages)
    return Overwrite(None)

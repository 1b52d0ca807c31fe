"""The row kinds of a stream's full phase, as Paimon Java's reader gives them.

Java reads the full phase of a stream (``scan.mode`` default / latest-full, from-snapshot-full)
with its batch planner (``SnapshotReaderImpl`` plans ``ScanMode.ALL`` as a batch scan) and its
batch reader, which give every row a kind (Paimon 0.9 and HEAD alike):

* a split Java reads *raw* (``DataSplit.convertToRawFiles``: the file's value columns, no merge)
  comes out as ``+I`` whatever kind the file stores;
* a split Java merges comes out with the merged record's kind
  (``ValueContentRowDataRecordIterator`` sets it from ``KeyValue.valueKind``): a deduplicate key
  whose newest record is ``+U`` is ``+U``, a key with one record keeps its own kind, and the
  records partial-update and aggregation fold together are ``+I`` - which our merge engines
  already give the merged ``_VALUE_KIND`` (`lake_assets.lsm.merge_engine`).

Which splits are raw is ``MergeTreeSplitGenerator.splitForBatch``: a bucket whose files all sit
above level 0 without delete rows is raw when it has deletion vectors, the first-row engine or
one level only; otherwise its sections (interval partition) are packed in key order into splits
of ``source.split.target-size`` bytes, each section weighing at least
``source.split.open-file-cost``, and a split of one file without delete rows is raw.
`full_phase_groups` plans the same splits, so each row gets Java's kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.lsm.merge_engine.names import FIRST_ROW
from lake_assets.lsm.run_partition import sections
from lake_assets.ops import deletion_vectors
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

__all__ = ["FullPhaseGroup", "full_phase_groups"]


@dataclass(frozen=True)
class FullPhaseGroup:
    """Files Java reads as one split of a full phase, and whether it reads them raw (all ``+I``)."""

    files: tuple[DataFileMeta, ...]
    raw: bool


def _without_delete_rows(meta: DataFileMeta) -> bool:
    # Java: an unknown count (files of old writers) counts as none
    return meta.delete_row_count is None or meta.delete_row_count == 0


def _pack_ordered(items: Sequence[list[DataFileMeta]], weight: list[int], target: int) -> list[list[DataFileMeta]]:
    """Java's ``BinPacking.packForOrdered``: items in order, a new bin when the next would overflow."""
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    current_weight = 0
    for item, w in zip(items, weight, strict=True):
        if current and current_weight + w > target:
            bins.append(current)
            current, current_weight = [], 0
        current += item
        current_weight += w
    if current:
        bins.append(current)
    return bins


def full_phase_groups(store: FileStore, files: Sequence[DataFileMeta]) -> list[FullPhaseGroup]:
    """The visible ``files`` of one bucket of a primary-key table, grouped as Java's batch planner
    splits them (see the module docstring)."""
    schema = store.schema
    opts = schema.core_options
    visible = store.visible_files(files, schema)
    if not visible:
        return []
    target, open_cost = opts.split_target_size, opts.split_open_file_cost
    all_raw = all(f.level != 0 and _without_delete_rows(f) for f in visible)
    one_level = len({f.level for f in visible}) == 1
    if all_raw and (deletion_vectors.enabled(schema) or opts.merge_engine == FIRST_ROW or one_level):
        # raw either way: however Java packs these files, each of its splits is read raw
        return [FullPhaseGroup(tuple(visible), True)]
    parts = sections(visible, schema.types(list(schema.trimmed_primary_keys)))
    weights = [max(sum(f.file_size for f in part), open_cost) for part in parts]
    return [FullPhaseGroup(tuple(group), len(group) == 1 and _without_delete_rows(group[0]))
            for group in _pack_ordered(parts, weights, target)]

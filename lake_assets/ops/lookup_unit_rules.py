"""How a lookup compaction unit merges, beside the merge itself: whether it merges each key's old
row in (`needs_old_values`), the merge function it applies (`lookup_merge_function`,
`folds_lone_records`), and whether a level-0 file it would write again unchanged is relabelled
instead (`relabel_candidate`, `same_rows`). The old rows themselves are `ops.dv_old_values`'.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.lsm.lookup_merge import LEVEL, merges_by_lookup
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.lsm.compact_strategy import RewriteSection
    from lake_assets.ops.compact.plan import CompactionTask
    from lake_assets.options import CoreOptions


def needs_old_values(options: CoreOptions) -> bool:
    """Whether a deletion-vector compaction must merge each key's older row into its output (Java
    persists looked-up values for the same engines: ``PositionedKeyValueProcessor``'s
    ``mergeEngine != DEDUPLICATE || !sequenceField.isEmpty()``). ``ignore-delete`` alone needs no
    values: a deduplicate key whose new records are all ignored deletes has no output row, so its
    old row is not marked and stays."""
    return not engine_of(options).deletion_vectors_by_key or bool(options.sequence_fields)


def lookup_merge_function(function: MergeFunction) -> MergeFunction:
    """``function`` as Paimon's lookup compaction applies it: to a key's only record as well (the
    partial-update and aggregation engines otherwise emit it unchanged, as Java's reducer wrapper
    does; a lone record with an all-null sequence group then keeps its group's values, where the
    lookup merge drops them)."""
    if not hasattr(function, "merges_singles"):
        return function
    lookup = copy.copy(function)
    lookup.merges_singles = True
    return lookup


def folds_lone_records(options: CoreOptions, task: CompactionTask) -> bool:
    """Whether ``task`` merges with Java's lookup wrapper (``LookupChangelogMergeFunctionWrapper``,
    which merges a key's lone record too: `lookup_merge_function`): a unit of a table that merges
    by lookup with a level-0 file among its inputs and an output above level 0
    (``ChangelogMergeTreeRewriter.rewriteLookupChangelog``); other units merge as usual."""
    return (merges_by_lookup(options) and task.output_level > 0
            and any(f.level == 0 for f in task.input_files))


# Options that give a level's files another format, codec or statistics than level 0's: a level-0
# file relabelled into such a level would not be what a rewrite writes there
PER_LEVEL_OPTIONS = ("file.format.per.level", "file.compression.per.level", "metadata.stats-mode.per.level")


def relabel_candidate(options: CoreOptions, schema_id: int, section: RewriteSection,
                      whole_rows: int) -> DataFileMeta | None:
    """The level-0 file a lookup unit's ``section`` rewrites alone (its one interval, read whole
    and merged once), which may be relabelled to the section's level when its merged rows are its
    own rows (`same_rows`); None otherwise. Such a rewrite would write the file's very rows again,
    in a file a reader cannot tell from it (its statistics and key range are the rows'): Java's
    lookup rewriter rewrites level 0 of partial-update and aggregation tables because a merge with
    the rows above may change them (``LookupMergeTreeCompactRewriter``), and where it did not, the
    rewrite's Parquet encode was a third of a partial-update DV round (bench/RESULTS.md, session 16).
    Not when a level-specific format, codec or statistics mode is set, or the file has another
    schema than the table's (a rewrite writes the current one)."""
    if section.kind != "rewrite" or section.output_level <= 0 or len(section.intervals) != 1:
        return None
    files = section.intervals[0]
    if len(files) != 1 or files[0].level != 0 or files[0].schema_id != schema_id or files[0].row_count > whole_rows:
        return None
    if any(options.raw.get(key) for key in PER_LEVEL_OPTIONS):
        return None
    return files[0]


def same_rows(merged: pa.Table, rows: pa.Table) -> bool:
    """Whether a merge's output ``merged`` is ``rows`` (a file's rows as the unit read them),
    every column and row in order (a NaN never equals itself here: such a file is rewritten)."""
    if LEVEL in rows.column_names:
        rows = rows.drop_columns([LEVEL])
    return bool(merged.num_rows == rows.num_rows and merged.schema.equals(rows.schema) and merged.equals(rows))


__all__ = ["PER_LEVEL_OPTIONS", "folds_lone_records", "lookup_merge_function", "needs_old_values", "relabel_candidate",
           "same_rows"]

"""Registry rows of row tracking and data evolution (Paimon 1.1+ / 1.2+ append tables);
`lake_assets.option_rules` merges them into the registry. What tables carrying them may do is
decided per operation by `lake_assets.table_support`; `row_tracking_shape_problem` is the shape
Paimon's ``SchemaValidation.validateRowTracking`` requires when such a table is created."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lake_assets.option_types import OptionRule

R = OptionRule
ROW_TRACKING_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("row-tracking.enabled", "bool", False, "Every row of an append table gets a stable _ROW_ID (Paimon 1.1+): "
      "data files record _FIRST_ROW_ID, snapshots nextRowId.",
      note="writes get their row ids at commit, as Paimon HEAD assigns them (lake_assets/ops/row_tracking.py); "
      "reads return _ROW_ID and _SEQUENCE_NUMBER when asked for by name; compaction stores each row's ids as columns "
      "of its outputs, as Paimon HEAD does (pypaimon 2.1 reads their _ROW_ID as null, pypaimon-rust 0.4 refuses "
      "them); rollback removes newer tags as Paimon's does, so no retained tag holds an id new rows get"),
    R("data-evolution.enabled", "bool", False, "Files of a row-tracking table may hold a subset of the "
      "columns (_WRITE_COLS), merged with the other files of their row-id range on read (Paimon 1.2+).",
      note="reads and change reads merge them as Paimon's DataEvolutionSplitRead "
      "(lake_assets/ops/data_evolution_read.py), pruning row-id ranges by merged stats (ops/row_range_prune.py); "
      "Table.update_columns writes column updates "
      "by _ROW_ID as pypaimon's update_by_arrow_with_row_id (ops/column_update.py), write_arrow(..., "
      "write_columns=[...]) new rows of some columns as pypaimon's with_write_type (ops/column_subset.py); "
      "compaction merges units of "
      "whole row-id ranges into files of every column, as Paimon HEAD's DataEvolutionCompactCoordinator; "
      "deletion vectors, BLOB/VECTOR columns and global indexes are refused"),
)}


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"  # as option_classification.is_true


def row_tracking_shape_problem(options: Mapping[str, str], primary_keys: Sequence[str]) -> str | None:
    """Why a table with these options and primary key cannot carry row tracking or data evolution,
    as Paimon's schema validation says; None when it can."""
    tracking = _true(options.get("row-tracking.enabled"))
    if tracking and primary_keys:
        return "row-tracking.enabled = true needs an append table (no primary key)"
    if tracking and str(options.get("bucket", "-1")).strip() != "-1":
        return "row-tracking.enabled = true needs bucket = -1"
    if _true(options.get("data-evolution.enabled")) and not tracking:
        return "data-evolution.enabled = true needs row-tracking.enabled = true"
    return None


__all__ = ["ROW_TRACKING_RULES", "row_tracking_shape_problem"]

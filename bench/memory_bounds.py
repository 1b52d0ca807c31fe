"""The configured memory bounds ``bench_memory.py`` prints beside the peaks it measures: of each
step (`bounds`, `spill_merge_bounds`) and of the compaction about to run (`compaction_bound`)."""

from __future__ import annotations

import numpy as np

from bench.memory_tables import OPTIONS, batch
from lake_assets.formats.data_file import ROW_GROUP_MAX_BYTES
from lake_assets.lsm.run_partition import split_into_runs
from lake_assets.ops import spill, write_spill
from lake_assets.ops.compact import fan_in as compact_fan_in
from lake_assets.ops.compact import memory as compact_memory
from lake_assets.ops.compact.plan import plan_compaction
from lake_assets.ops.compact.unit_pool import compaction_parallelism
from lake_assets.option_rules import RULES
from lake_assets.option_types import parse_memory_size
from lake_assets.parallelism import usable_cpus


def compaction_bound(table, full: bool) -> dict[str, object]:
    """The configured bound of the compaction about to run, printed beside its peak: rows that
    the units at once hold at most (`ops.compact.memory`), and those rows in MiB at this table's
    Arrow bytes per row (its columns plus the sequence number and row kind)."""
    store = table.store
    opts = store.schema.core_options
    plan = plan_compaction(store, full=full)
    runs = max((len(split_into_runs(iv, store.schema.types(list(store.schema.trimmed_primary_keys))))
                for t in plan.tasks for s in t.sections if s.kind == "rewrite" for iv in s.intervals), default=0)
    if not runs:
        return {}  # no unit merges (upgrades only): the bound is that of what else the units do
    units = min(len(plan.tasks), compaction_parallelism(store))
    rows = compact_memory.compaction_rows_bound(opts, runs, units)
    sample = batch(np.random.default_rng(0), np.arange(65536), 0)
    row_bytes = sample.nbytes / sample.num_rows + 9
    # the runs' Parquet readers beside their batches (round 7): key, system and value columns, a
    # nested column by its leaves (session 13; before, top-level columns)
    columns = (compact_memory.run_read_columns(store.schema) if hasattr(compact_memory, "run_read_columns")
               else len(store.schema.trimmed_primary_keys) + 2 + len(store.schema.field_names))
    readers = (compact_memory.compaction_reader_bytes(opts, runs, units, columns)
               if hasattr(compact_memory, "compaction_reader_bytes") else 0)
    # changelog production (lookup, full-compaction) has its own read.batch-size bounds (round 2),
    # which this sum of the merge's rows does not include
    changelog = any(t.changelog_producer for t in plan.tasks)
    return {"compaction_runs_per_unit": runs, "compaction_units_at_once": units,
            "sort_spill_threshold": compact_fan_in.sort_spill_threshold(opts),
            "compaction_bound_rows": rows, "reader_bound_mib": round(readers / 2**20, 1),
            "bound_mib": round((rows * row_bytes + readers) / 2**20, 1),
            "bound_excludes_changelog": changelog}


def bounds(batch_rows: int, read_ahead: int, write_buffer: str = OPTIONS["write-buffer-size"]) -> dict[str, object]:
    """The configured numbers that bound each step's memory."""
    workers = max(2, usable_cpus())
    buffer_bytes = parse_memory_size(write_buffer)
    handles = int(OPTIONS["local-sort.max-num-file-handles"])
    return {
        "write-buffer-size": write_buffer,
        "local-sort.max-num-file-handles": handles,
        **spill_merge_bounds(buffer_bytes, handles),
        "spill merge rows (min/step)": write_spill.SPILL_MERGE_ROWS,
        "read batch rows": batch_rows,
        "read-ahead batches per worker": read_ahead,
        "read workers": workers,
        "compaction.merge-rows (unset: memory.DEFAULT_MERGE_ROWS; <= 2x per merge call)":
            compact_memory.DEFAULT_MERGE_ROWS,
        "compaction read batch rows per sorted run, 2 runs (memory.run_batch_rows)":
            compact_memory.run_batch_rows(compact_memory.DEFAULT_MERGE_ROWS, batch_rows, 2),
        "compaction units at once (compaction.parallelism, default CPUs, at least 2)": workers,
        "first-row lookup key chunk rows (per sorted run; compaction.merge-rows)": compact_memory.DEFAULT_MERGE_ROWS,
        "changelog old-state read batch rows (read.batch-size)": batch_rows,
        # a file is decoded a row group at a time: its size bounds every file read (the
        # older levels read by changelog production and first-row lookups included)
        "row group max Arrow bytes (data_file.ROW_GROUP_MAX_BYTES)": ROW_GROUP_MAX_BYTES,
        # from round 7: a batched read holds this much of each column chunk, not the whole chunk
        **({"read.parquet.buffer-size (per column; + a data page and a dictionary page)":
            RULES["read.parquet.buffer-size"].default} if "read.parquet.buffer-size" in RULES else {}),
        "target-file-size (primary-key default)": "128 mb",
    }


def spill_merge_bounds(buffer_bytes: int, handles: int) -> dict[str, object]:
    """The commit-time merge of spilled runs holds one run batch per merged run: at most
    ``handles`` runs per bucket (more are folded into one first), in as many buckets at once as
    the writer merges in parallel. Compare the printed largest fan-in of each step."""
    out: dict[str, object] = {"spill batch bytes (spill_batch_bytes)": spill.spill_batch_bytes(buffer_bytes, handles)}
    if hasattr(write_spill, "spill_merge_bound_bytes"):  # from round 4 on
        out["buckets merged at once (write_spill.bucket_flush_threads)"] = write_spill.bucket_flush_threads()
        out["spill merge run batches at most, MiB (batch x handles x buckets at once)"] = round(
            write_spill.spill_merge_bound_bytes(buffer_bytes, handles) / 2**20, 1)
    return out

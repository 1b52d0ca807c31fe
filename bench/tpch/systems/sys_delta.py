"""deltalake (delta-rs): phase ``all``, in one process.

Load with ``write_deltalake`` (partitioned by ship_month), each round as one MERGE (update matched
``+U`` rows, delete matched ``-D`` rows, insert unmatched ``+U`` rows), reads, ``optimize.compact``,
reads, the small commits as appends (they only insert new keys), and ``vacuum`` with zero
retention (the closest to expiring all but the latest snapshot). Default writer properties.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bench.tpch.generate import KEYS, OP, PARTITION
from bench.tpch.verify import differences, reference
from bench.tpch.worker import Context, input_reader

UPDATED = ("l_quantity", "l_extendedprice")


def versions() -> dict[str, str]:
    return {"deltalake": importlib.metadata.version("deltalake")}


def table_columns(ctx: Context) -> list[str]:
    return [n for n in pq.read_schema(ctx.plan.base).names if n != OP]


def merge_round(path: str, table: Any, columns: list[str]) -> dict[str, Any]:
    """One upsert round as one MERGE; returns delta-rs's metrics."""
    on = " AND ".join(f"t.{k} = s.{k}" for k in (*KEYS, PARTITION))  # ship_month lets it prune partitions
    return (
        table.merge(input_reader(path), predicate=on, source_alias="s", target_alias="t")
        .when_matched_delete(predicate=f"s.{OP} = '-D'")
        .when_matched_update(updates={c: f"s.{c}" for c in UPDATED}, predicate=f"s.{OP} <> '-D'")
        .when_not_matched_insert(updates={c: f"s.{c}" for c in columns}, predicate=f"s.{OP} <> '-D'")
        .execute()
    )


def check_reads(ctx: Context, uri: str, suffix: str, ref_path: str) -> None:
    from deltalake import DeltaTable

    with ctx.step(f"read_full{suffix}") as extra:
        result = DeltaTable(uri).to_pyarrow_table()
        extra["rows"] = result.num_rows
        extra["result_mib"] = result.nbytes / 2**20
    ctx.check(f"read_full{suffix}", differences(result, reference(ref_path)))
    del result
    p = ctx.plan
    expr = ((ds.field(PARTITION) == p.select_month) & (ds.field(KEYS[0]) >= p.select_lo)
            & (ds.field(KEYS[0]) < p.select_hi))
    with ctx.step(f"read_sel{suffix}") as extra:
        selected = DeltaTable(uri).to_pyarrow_dataset().to_table(filter=expr)
        extra["rows"] = selected.num_rows
    ctx.check(f"read_sel{suffix}", differences(selected, reference(ref_path, p.select_filter)))


def phase_all(ctx: Context) -> None:
    from deltalake import DeltaTable, write_deltalake

    uri = str(ctx.warehouse / "lineitem")
    columns = table_columns(ctx)
    with ctx.step("load", ctx.plan.base_rows):
        write_deltalake(uri, input_reader(ctx.plan.base, columns), partition_by=[PARTITION])
    for r, (path, rows) in enumerate(zip(ctx.plan.rounds, ctx.plan.round_rows, strict=True), start=1):
        table = DeltaTable(uri)
        with ctx.step(f"upsert_{r}", rows) as extra:
            metrics = merge_round(path, table, columns)
        extra.update({k: metrics.get(k) for k in ("num_target_rows_updated", "num_target_rows_deleted",
                                                   "num_target_files_added", "num_target_files_removed")})
    check_reads(ctx, uri, "_mor", ctx.plan.ref_upserted)

    table = DeltaTable(uri)
    with ctx.step("compact", ctx.plan.upserted_rows) as extra:
        metrics = table.optimize.compact()
    extra.update({k: metrics.get(k) for k in ("numFilesAdded", "numFilesRemoved")})
    extra["noop"] = not metrics.get("numFilesAdded")  # MERGE already left one file per partition
    check_reads(ctx, uri, "", ctx.plan.ref_upserted)

    small = pq.read_table(ctx.plan.small, columns=columns)
    with ctx.step("small_commits", small.num_rows) as extra:
        for i in range(ctx.plan.small_commits):
            write_deltalake(uri, small.slice(i * ctx.plan.small_rows, ctx.plan.small_rows), mode="append")
        extra["commits"] = ctx.plan.small_commits
    commits = DeltaTable(uri).version() + 1
    # MERGE rewrites whole files, so optimize may find nothing to do; then it commits no version.
    expected = ctx.plan.commits_before_expire - (0 if metrics.get("numFilesAdded") else 1)
    ctx.check("commits_before_expire", None if commits == expected else f"{commits} versions, expected {expected}")
    table = DeltaTable(uri)
    with ctx.step("expire", commits) as extra:
        deleted = table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    extra["deleted_data_files"] = len(deleted)
    final = DeltaTable(uri).to_pyarrow_table()
    ctx.check("final_after_expire", differences(final, reference(ctx.plan.ref_final)))


PHASES = {"all": phase_all}

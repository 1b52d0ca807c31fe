"""lake_assets in-process (core API): phases ``write`` → ``compact`` → ``history``.

``write``: create the table, load, the upsert rounds, then the merge-on-read full and selective reads.
``compact``: full compaction, then both reads again. ``history``: the small commits, then expiry of
all but the latest snapshot, and a final read. Each phase records the live data files, which the
DuckDB, polars and pyarrow-limit workers read between phases.
"""

from __future__ import annotations

import importlib.metadata
import os
from datetime import datetime, timedelta
from typing import Any

import pyarrow.parquet as pq

from bench.tpch.generate import KEYS, OP, PARTITION
from bench.tpch.verify import differences, reference
from bench.tpch.worker import TABLE, Context, input_reader

EXPIRE_LIMIT = 1_000_000
# Paimon requires the partition keys in the primary key. ship_month is a function of l_shipdate,
# which no upsert changes, so (l_orderkey, l_linenumber) still identifies a row; the bucket key
# defaults to the primary key minus the partition keys: (l_orderkey, l_linenumber).


def table_options(ctx: Context) -> dict[str, str]:
    return {
        "bucket": str(ctx.plan.bucket),
        "rowkind.field": OP,
        "write-only": "true",
        "write-buffer-size": ctx.options.get("write_buffer_size", "256 mb"),
        "target-file-size": ctx.options.get("target_file_size", "128 mb"),
    }


def versions() -> dict[str, str]:
    return {"lake_assets": importlib.metadata.version("lake_assets")}


def catalog(ctx: Context) -> Any:
    from lake_assets import Catalog

    return Catalog(str(ctx.warehouse))


def live_files(table: Any) -> list[str]:
    """Absolute paths of the latest snapshot's data files."""
    out = []
    for split in table.plan():
        for meta in split.files:
            path = table.store.data_file_path(split.partition, split.bucket, meta)
            out.append(path if os.path.isabs(path) else os.path.abspath(path))
    return out


def check_reads(ctx: Context, suffix: str, ref_path: str) -> None:
    """The full and the selective read, each timed, then compared with the reference (untimed)."""
    cat = catalog(ctx)
    with ctx.step(f"read_full{suffix}") as extra:
        result = cat.get_table(TABLE).to_arrow()
        extra["rows"] = result.num_rows
        extra["result_mib"] = result.nbytes / 2**20
    ctx.check(f"read_full{suffix}", differences(result, reference(ref_path)))
    del result
    with ctx.step(f"read_sel{suffix}") as extra:
        selected = cat.get_table(TABLE).to_arrow(filter=ctx.plan.select_filter)
        extra["rows"] = selected.num_rows
    ctx.check(f"read_sel{suffix}", differences(selected, reference(ref_path, ctx.plan.select_filter)))


def phase_write(ctx: Context) -> None:
    cat = catalog(ctx)
    cat.create_database("db")
    schema = pq.read_schema(ctx.plan.base)
    cat.create_table(TABLE, schema, primary_keys=[*KEYS, PARTITION], partition_keys=[PARTITION],
                     options=table_options(ctx))
    with ctx.step("load", ctx.plan.base_rows):
        cat.get_table(TABLE).write_arrow(input_reader(ctx.plan.base))
    for r, (path, rows) in enumerate(zip(ctx.plan.rounds, ctx.plan.round_rows, strict=True), start=1):
        table = cat.get_table(TABLE)  # a fresh handle per round (untimed), as a new job would get
        with ctx.step(f"upsert_{r}", rows):
            table.write_arrow(input_reader(path))
    check_reads(ctx, "_mor", ctx.plan.ref_upserted)
    ctx.meter.info["files_upserted"] = live_files(cat.get_table(TABLE))


def phase_compact(ctx: Context) -> None:
    table = catalog(ctx).get_table(TABLE)
    with ctx.step("compact", ctx.plan.upserted_rows) as extra:
        result = table.compact(full=True)
    extra.update({k: result.to_dict()[k] for k in ("tasks", "files_in", "files_out", "rows_in", "rows_out")})
    check_reads(ctx, "", ctx.plan.ref_upserted)
    ctx.meter.info["files_compacted"] = live_files(catalog(ctx).get_table(TABLE))


def phase_history(ctx: Context) -> None:
    cat = catalog(ctx)
    small = pq.read_table(ctx.plan.small)
    with ctx.step("small_commits", small.num_rows) as extra:
        for i in range(ctx.plan.small_commits):
            cat.get_table(TABLE).write_arrow(small.slice(i * ctx.plan.small_rows, ctx.plan.small_rows))
        extra["commits"] = ctx.plan.small_commits
    snapshots = len(cat.get_table(TABLE).snapshots())
    ctx.check("commits_before_expire", None if snapshots == ctx.plan.commits_before_expire
              else f"{snapshots} snapshots, expected {ctx.plan.commits_before_expire}")
    table = cat.get_table(TABLE)
    with ctx.step("expire", snapshots) as extra:
        result = table.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1),
                                        limit=EXPIRE_LIMIT)
    extra.update(result.summary())
    left = len(cat.get_table(TABLE).snapshots())
    ctx.check("expire_kept_latest_only", None if left == 1 else f"{left} snapshots left, expected 1")
    final = cat.get_table(TABLE).to_arrow()
    ctx.check("final_after_expire", differences(final, reference(ctx.plan.ref_final)))


PHASES = {"write": phase_write, "compact": phase_compact, "history": phase_history}

"""DuckDB reading lake_assets' Parquet data files directly: the cost of merging in SQL.

``mor``: the files after the upserts, merged by a window (last sequence number per key, deletes
dropped). ``compacted``: the files after full compaction, read as they are (no merge needed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.tpch.generate import KEYS
from bench.tpch.verify import differences, reference
from bench.tpch.worker import Context

SYSTEM_COLUMNS = ("_KEY_l_orderkey", "_KEY_l_linenumber", "_SEQUENCE_NUMBER", "_VALUE_KIND")


def versions() -> dict[str, str]:
    import duckdb

    return {"duckdb": duckdb.__version__}


def connect(ctx: Context) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {ctx.options.get('threads', 2)}")
    return con


def files_of(ctx: Context, key: str) -> list[str]:
    return json.loads(Path(ctx.options["lake_result"]).read_text())["info"][key]


def where_selective(ctx: Context) -> str:
    p = ctx.plan
    return f"ship_month = '{p.select_month}' AND l_orderkey >= {p.select_lo} AND l_orderkey < {p.select_hi}"


def merged_sql(files: list[str], where: str = "TRUE") -> str:
    keys = ", ".join(f"_KEY_{k}" for k in KEYS)
    return (
        f"SELECT * EXCLUDE ({', '.join(SYSTEM_COLUMNS)}) FROM read_parquet({files!r}) "
        f"WHERE {where} QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY _SEQUENCE_NUMBER DESC) = 1 "
        "AND _VALUE_KIND IN (0, 2)"
    )


def plain_sql(files: list[str], where: str = "TRUE") -> str:
    return f"SELECT * EXCLUDE ({', '.join(SYSTEM_COLUMNS)}) FROM read_parquet({files!r}) WHERE {where}"


def run_reads(ctx: Context, suffix: str, sql_of: Any, files: list[str]) -> None:
    con = connect(ctx)
    with ctx.step(f"read_full{suffix}") as extra:
        result: pa.Table = con.sql(sql_of(files)).to_arrow_table()
        extra["rows"] = result.num_rows
        extra["result_mib"] = result.nbytes / 2**20
    ctx.check(f"read_full{suffix}", differences(result, reference(ctx.plan.ref_upserted)))
    del result
    with ctx.step(f"read_sel{suffix}") as extra:
        selected = con.sql(sql_of(files, where_selective(ctx))).to_arrow_table()
        extra["rows"] = selected.num_rows
    ctx.check(f"read_sel{suffix}", differences(selected, reference(ctx.plan.ref_upserted, ctx.plan.select_filter)))


def phase_mor(ctx: Context) -> None:
    run_reads(ctx, "_mor", merged_sql, files_of(ctx, "files_upserted"))


def phase_compacted(ctx: Context) -> None:
    run_reads(ctx, "", plain_sql, files_of(ctx, "files_compacted"))


PHASES = {"mor": phase_mor, "compacted": phase_compacted}

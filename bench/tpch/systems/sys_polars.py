"""polars reading lake_assets' data files after full compaction (no merge needed), as a second engine."""

from __future__ import annotations

import json
from pathlib import Path

from bench.tpch.systems.sys_duckdb import SYSTEM_COLUMNS
from bench.tpch.verify import differences, reference
from bench.tpch.worker import Context


def versions() -> dict[str, str]:
    import polars as pl

    return {"polars": pl.__version__}


def phase_compacted(ctx: Context) -> None:
    import polars as pl

    files = json.loads(Path(ctx.options["lake_result"]).read_text())["info"]["files_compacted"]
    p = ctx.plan
    with ctx.step("read_full") as extra:
        result = pl.scan_parquet(files).drop(SYSTEM_COLUMNS).collect().to_arrow()
        extra["rows"] = result.num_rows
        extra["result_mib"] = result.nbytes / 2**20
    ctx.check("read_full", differences(result, reference(p.ref_upserted)))
    del result
    with ctx.step("read_sel") as extra:
        selected = (
            pl.scan_parquet(files)
            .filter((pl.col("ship_month") == p.select_month) & (pl.col("l_orderkey") >= p.select_lo)
                    & (pl.col("l_orderkey") < p.select_hi))
            .drop(SYSTEM_COLUMNS).collect().to_arrow()
        )
        extra["rows"] = selected.num_rows
    ctx.check("read_sel", differences(selected, reference(p.ref_upserted, p.select_filter)))


PHASES = {"compacted": phase_compacted}

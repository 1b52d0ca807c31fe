"""pypaimon (the same table format, Python): phase ``write`` under ``.venv-paimon`` (pyarrow 19).

Load, the upsert rounds (row kinds from the ``op`` column via ``rowkind.field``), then the
merge-on-read full and selective reads. pypaimon cannot compact, so that is all it runs. Each
input batch is written as it is read (``write_arrow_batch``), one commit per step.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.tpch.generate import KEYS, OP, PARTITION
from bench.tpch.verify import differences, reference
from bench.tpch.worker import TABLE, Context, input_reader


def versions() -> dict[str, str]:
    return {"pypaimon": importlib.metadata.version("pypaimon"), "pyarrow (pypaimon venv)": pa.__version__}


def write_commit(table: Any, reader: pa.RecordBatchReader) -> None:
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    commit = builder.new_commit()
    try:
        for batch in reader:
            writer.write_arrow_batch(batch)
        commit.commit(writer.prepare_commit())
    finally:
        writer.close()
        commit.close()


def read(table: Any, ctx: Context, selective: bool) -> pa.Table:
    builder = table.new_read_builder()
    if selective:
        pb = builder.new_predicate_builder()
        p = ctx.plan
        builder = builder.with_filter(pb.and_predicates([
            pb.equal(PARTITION, p.select_month), pb.greater_or_equal(KEYS[0], p.select_lo),
            pb.less_than(KEYS[0], p.select_hi),
        ]))
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits)


def phase_write(ctx: Context) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(ctx.warehouse)})
    catalog.create_database("db", True)
    options = {"bucket": str(ctx.plan.bucket), "rowkind.field": OP, "write-only": "true"}
    schema = Schema.from_pyarrow_schema(pq.read_schema(ctx.plan.base), primary_keys=[*KEYS, PARTITION],
                                        partition_keys=[PARTITION], options=options)
    catalog.create_table(TABLE, schema, False)
    with ctx.step("load", ctx.plan.base_rows):
        write_commit(catalog.get_table(TABLE), input_reader(ctx.plan.base))
    for r, (path, rows) in enumerate(zip(ctx.plan.rounds, ctx.plan.round_rows, strict=True), start=1):
        table = catalog.get_table(TABLE)
        with ctx.step(f"upsert_{r}", rows):
            write_commit(table, input_reader(path))
    for selective, name, ref_filter in ((False, "read_full_mor", None),
                                        (True, "read_sel_mor", ctx.plan.select_filter)):
        table = catalog.get_table(TABLE)
        with ctx.step(name) as extra:
            result = read(table, ctx, selective)
            extra["rows"] = result.num_rows
            if not selective:
                extra["result_mib"] = result.nbytes / 2**20
        ctx.check(name, differences(result, reference(ctx.plan.ref_upserted, ref_filter)))
        del result


PHASES = {"write": phase_write}

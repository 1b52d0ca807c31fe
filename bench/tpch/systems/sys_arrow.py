"""Plain pyarrow Parquet, the physical reference: phases ``load``, ``read`` and ``compact_limit``.

``load`` streams the base rows into one zstd (level 1) file. ``read`` reads the single compacted
copy of the upserted content (``ref_upserted.parquet``: sorted by key, zstd level 1), in full and
with the selective filter (row-group statistics prune). ``compact_limit`` is the physical limit of a
full compaction: read the lake table's data files after the upserts, sort by key and sequence
number, keep the last row per key unless it is a delete, write one zstd level-1 file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bench.tpch.generate import KEYS
from bench.tpch.verify import differences, reference
from bench.tpch.worker import Context, input_reader

SEQUENCE = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
ADD_KINDS = (0, 2)  # +I, +U; -U (1) and -D (3) retract
FILE_KEYS = tuple(f"_KEY_{k}" for k in KEYS)


def versions() -> dict[str, str]:
    return {"pyarrow": pa.__version__}


def phase_load(ctx: Context) -> None:
    out = ctx.warehouse / "lineitem.parquet"
    ctx.warehouse.mkdir(parents=True, exist_ok=True)
    reader = input_reader(ctx.plan.base)
    with ctx.step("load", ctx.plan.base_rows), \
            pq.ParquetWriter(out, reader.schema, compression="zstd", compression_level=1) as writer:
        for batch in reader:
            writer.write_batch(batch)


def phase_read(ctx: Context) -> None:
    path = ctx.plan.ref_upserted
    with ctx.step("read_full") as extra:
        result = pq.read_table(path)
        extra["rows"] = result.num_rows
        extra["result_mib"] = result.nbytes / 2**20
    ctx.check("read_full", differences(result, reference(path)))
    del result
    with ctx.step("read_sel") as extra:
        selected = pq.read_table(path, filters=ctx.plan.select_filter)
        extra["rows"] = selected.num_rows
    ctx.check("read_sel", differences(selected, reference(path, ctx.plan.select_filter)))


def last_per_key(data: pa.Table) -> pa.Table:
    """Rows sorted by key, the highest sequence number per key, deletes dropped."""
    data = data.take(pc.sort_indices(data, [(k, "ascending") for k in (*FILE_KEYS, SEQUENCE)]))
    k1, k2 = (data.column(k).to_numpy() for k in FILE_KEYS)
    last = np.ones(len(k1), dtype=bool)
    last[:-1] = (k1[1:] != k1[:-1]) | (k2[1:] != k2[:-1])
    keep = last & np.isin(data.column(VALUE_KIND).to_numpy(), ADD_KINDS)
    return data.filter(pa.array(keep))


def phase_compact_limit(ctx: Context) -> None:
    files = json.loads(Path(ctx.options["lake_result"]).read_text())["info"]["files_upserted"]
    with tempfile.TemporaryDirectory(dir=ctx.warehouse.parent) as tmp:
        with ctx.step("compact", ctx.plan.upserted_rows) as extra:
            merged = last_per_key(ds.dataset(files, format="parquet").to_table())
            pq.write_table(merged, os.path.join(tmp, "compacted.parquet"), compression="zstd", compression_level=1)
            extra["files_in"] = len(files)
        ctx.check("compact", differences(merged, reference(ctx.plan.ref_upserted)))


PHASES = {"load": phase_load, "read": phase_read, "compact_limit": phase_compact_limit}

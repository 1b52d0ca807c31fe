"""Per-micro-batch CPU of a streaming write of a cross-partition upsert table (issue 14 round 4): the
Spark sink's task (`write_task`) for each micro-batch, then its commit, in this process, with the
key index read from the table every micro-batch (``base``: ``keep_key_index`` off, as before) or
kept across micro-batches (``kept``). The table holds ``rows`` keys over four dates; each
micro-batch moves ``batch`` random keys to another date. A query of each mode runs ``batches``
micro-batches, the modes alternating ``repeat`` times; the first micro-batch of a ``kept`` query
reads the index (reported apart), the others are measured; the index goes from one micro-batch to
the next through the local disk (the system temp directory here), as in Spark. Measured: CPU
seconds of the task and of the commit per micro-batch (``time.process_time``).

    PYTHONPATH=<tree> .venv/bin/python bench/bench_cross_partition_stream.py --rows 400000 --batch 2000

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import uuid

import numpy as np
import pyarrow as pa

import lake_assets
from lake_assets import Catalog, Table
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spark import key_index_cache
from lake_assets.spark.source_options import SourceOptions
from lake_assets.spark.write_task import write_task

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
DATES = np.array(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"])


def _query(t: Table, options: SourceOptions, rng: np.random.Generator, rows: int, size: int, batches: int,
           keep: bool) -> tuple[list[float], list[float]]:
    """One streaming query's micro-batches: (task CPU s, commit CPU s) of each."""
    user = f"spark-{uuid.uuid4()}"
    task_cpu, commit_cpu = [], []
    for b in range(batches):
        ids = rng.choice(rows, size=size, replace=False).astype(np.int64)
        data = pa.table({"id": ids, "dt": DATES[rng.integers(0, 4, size)], "amount": rng.random(size)}, schema=SCHEMA)
        c0 = time.process_time()
        message = write_task(options, user, iter(data.to_batches()), keep_key_index=keep)
        c1 = time.process_time()
        t.new_committer(user).commit([CommitMessage.from_json(m) for m in message.messages], b)
        c2 = time.process_time()
        task_cpu.append(c1 - c0)
        commit_cpu.append(c2 - c1)
    if keep:  # the query ends: the index it left on the local disk goes, with its lease
        left = key_index_cache.take(t, user, None)
        if left is not None:
            left.close()
    return task_cpu, commit_cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-xpart-stream-")
    try:
        cat = Catalog(f"{root}/wh")
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": str(a.rows // 8)})
        ids = np.arange(a.rows, dtype=np.int64)
        t.write_arrow(pa.table({"id": ids, "dt": DATES[ids % 4], "amount": np.zeros(a.rows)}, schema=SCHEMA))
        options = SourceOptions.parse({"warehouse": f"{root}/wh", "path": "db.t"})
        rng = np.random.default_rng(11)
        got: dict[str, list[float]] = {"base_task": [], "kept_task": [], "kept_first_task": [], "commit": []}
        for _ in range(a.repeat):
            for keep in (False, True):
                task, commit = _query(t, options, rng, a.rows, a.batch, a.batches, keep)
                if keep:
                    got["kept_first_task"].append(task[0])
                    got["kept_task"] += task[1:]
                else:
                    got["base_task"] += task[1:]  # the same micro-batches as kept's
                got["commit"] += commit[1:]
                t = t.refresh()
        print(json.dumps({
            "tree": str(lake_assets.__file__), "rows": a.rows, "batch": a.batch, "batches": a.batches,
            "repeat": a.repeat, **{f"{k}_median_s": round(statistics.median(v), 4) for k, v in got.items()},
            **{f"{k}_s": [round(x, 3) for x in v] for k, v in got.items()}}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

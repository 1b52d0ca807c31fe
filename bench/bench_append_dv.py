"""Deletes and compaction of an append table with deletion vectors (issue 14), CPU seconds.

Per round, alternating, on fresh copies of one table (``FILES`` files of ``ROWS`` rows each):

* ``delete``: `Table.delete_where` of ~1% of the rows by an ``in`` filter on ``id`` (reads the
  filter column of every file, marks vectors, commits); peer ``read_id``: `to_arrow(columns=["id"])`
  of the same table, the read the delete cannot do without, and ``read``: a full read;
* ``compact_dv``: compaction after a delete of 25% of every file's rows (every file rewritten
  without them); peer ``compact_plain``: the same files in a table without vectors, compacted
  with ``compaction.min.file-num`` small enough to rewrite them all.

    PYTHONPATH=. python bench/bench_append_dv.py [rounds]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from lake_assets import Catalog

FILES = 8
ROWS = 250_000
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("x", pa.float64())])


def _data(start: int) -> pa.Table:
    ids = np.arange(start, start + ROWS, dtype=np.int64)
    return pa.table({"id": ids, "dt": pa.array(["d"] * ROWS), "v": pa.array([f"s{i % 997}" for i in range(ROWS)]),
                     "x": ids * 0.5}, schema=SCHEMA)


def _build(root: str, dv: bool) -> str:
    wh = os.path.join(root, "dv" if dv else "plain")
    cat = Catalog(wh)
    cat.create_database("db")
    options = {"bucket": "-1", "compaction.min.file-num": "2", "write-only": "true"}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options=options)
    for i in range(FILES):
        t.write_arrow(_data(i * ROWS))
    return wh


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    root = tempfile.mkdtemp(prefix="bench-append-dv-")
    base = {dv: _build(os.path.join(root, "base"), dv) for dv in (True, False)}
    rng = np.random.default_rng(7)
    few = sorted(int(i) for i in rng.choice(FILES * ROWS, FILES * ROWS // 100, replace=False))
    quarter = [("id", "in", list(range(0, FILES * ROWS, 4)))]
    times: dict[str, list[float]] = {k: [] for k in ("delete", "read_id", "read", "compact_dv", "compact_plain")}
    for r in range(rounds):
        copies = {}
        for dv in (True, False):
            copies[dv] = os.path.join(root, f"r{r}-{dv}")
            shutil.copytree(base[dv], copies[dv])
        t = Catalog(copies[True]).get_table("db.t")
        times["read_id"].append(_cpu(lambda t=t: t.to_arrow(columns=["id"])))
        times["delete"].append(_cpu(lambda t=t: t.delete_where([("id", "in", few)])))
        times["read"].append(_cpu(lambda t=t: t.to_arrow()))
        t.delete_where(quarter)  # 25% of every file, then every file is past the 0.2 threshold
        t = Catalog(copies[True]).get_table("db.t")
        times["compact_dv"].append(_cpu(lambda t=t: t.compact()))
        p = Catalog(copies[False]).get_table("db.t")
        times["compact_plain"].append(_cpu(lambda p=p: p.compact()))
        assert Catalog(copies[True]).get_table("db.t").to_arrow(columns=["id"]).num_rows == FILES * ROWS * 3 // 4 - len(
            [i for i in few if i % 4])
    print(f"{FILES} files x {ROWS} rows, {rounds} rounds; CPU seconds, median (min)")
    for k, v in times.items():
        print(f"  {k:14s} {statistics.median(v):7.3f} ({min(v):.3f})")
    print("load average:", os.getloadavg())
    shutil.rmtree(root)


if __name__ == "__main__":
    main()

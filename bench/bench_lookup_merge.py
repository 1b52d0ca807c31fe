"""CPU time of reads and upsert rounds of a lookup aggregation table (``changelog-producer = lookup``).

Builds one table (``--rows`` keys, then ``--rounds`` upserts of a tenth of the keys each, every
commit compacting level 0 up, a dedicated compaction every third round, so keys sit in several
levels) and reports the best process CPU seconds of ``--repeat`` full reads (``to_arrow``) and of
``--repeat`` further upsert rounds (write + inline lookup compaction). Run it under the trees to
compare, alternating (``PYTHONPATH=<tree>``), e.g.:

    PYTHONPATH=/tmp/base python bench/bench_lookup_merge.py; PYTHONPATH=. python bench/bench_lookup_merge.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
import pyarrow as pa

from lake_assets import Catalog

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("s", pa.string())])


def _upsert(t, rng: np.random.Generator, rows: int, n: int) -> None:
    keys = np.sort(rng.choice(rows, n, replace=False)).astype(np.int64)
    t.write_arrow(pa.table({"k": keys, "a": rng.integers(0, 100, n), "s": pa.array(keys.astype(str))},
                           schema=SCHEMA))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={
            "bucket": "2", "changelog-producer": "lookup", "merge-engine": "aggregation",
            "fields.a.aggregate-function": "sum", "fields.s.aggregate-function": "last_non_null_value"})
        keys = np.arange(args.rows, dtype=np.int64)
        t.write_arrow(pa.table({"k": keys, "a": np.ones(args.rows, np.int64), "s": pa.array(keys.astype(str))},
                               schema=SCHEMA))
        for i in range(args.rounds):
            _upsert(t, rng, args.rows, args.rows // 10)
            if i % 3 == 2:
                t.compact()
        reads, rounds = [], []
        for _ in range(args.repeat):
            start = time.process_time()
            t.to_arrow()
            reads.append(time.process_time() - start)
        for _ in range(args.repeat):
            start = time.process_time()
            _upsert(t, rng, args.rows, args.rows // 10)
            rounds.append(time.process_time() - start)
        print(json.dumps({"read_cpu_s": round(min(reads), 4), "upsert_round_cpu_s": round(min(rounds), 4),
                          "total": int(pa.compute.sum(t.to_arrow().column("a")).as_py())}))


if __name__ == "__main__":
    main()

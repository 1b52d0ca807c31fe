"""What a compacting writer's look at its earlier rounds costs (`ops.writer_rounds.RoundLedger`).

A primary-key writer reused across commits looks, before each round's inline compaction, whether
the rounds it carried landed (it reads the delta of the snapshots committed since). This runs
``--rounds`` upsert rounds of ``--rows`` keys into a ``--buckets`` table (``--dv``: with deletion
vectors; ``--cross-partition``: a cross-partition upsert table, keys moving among three partitions,
its buckets dynamic), each prepared and committed, and reports the process CPU of the rounds and of the
ledger's looks (none on code without the ledger: run it against a ``git archive`` of main with
that tree on ``PYTHONPATH`` for the peer; before session 17 cross-partition writers made none). Example::

    PYTHONPATH=. .venv/bin/python bench/bench_writer_round_ledger.py --rounds 30 --rows 20000 --dv
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa

import lake_assets
from lake_assets import Catalog


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--dv", action="store_true")
    parser.add_argument("--cross-partition", action="store_true")
    a = parser.parse_args()
    looks = [0.0, 0]
    try:
        from lake_assets.ops import writer_rounds
    except ImportError:  # the peer: code without the ledger
        pass
    else:
        real = writer_rounds.RoundLedger.check

        def timed(self: Any, store: Any, table: str) -> bool:
            start = time.process_time()
            try:
                return real(self, store, table)
            finally:
                looks[0] += time.process_time() - start
                looks[1] += 1

        writer_rounds.RoundLedger.check = timed  # type: ignore[method-assign]
    cat = Catalog(tempfile.mkdtemp() + "/wh")
    cat.create_database("db")
    dv = {"deletion-vectors.enabled": "true"} if a.dv else {}
    if a.cross_partition:  # about --buckets buckets per partition
        options = {"dynamic-bucket.target-row-num": str(max(1, a.rows // a.buckets)), **dv}
        t = cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("p", pa.int64())]),
                             primary_keys=["k"], partition_keys=["p"], options=options)
    else:
        options = {"bucket": str(a.buckets), **dv}
        t = cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options=options)
    writer, committer = t.new_writer("bench"), t.new_committer("bench")
    rng = np.random.default_rng(1)
    start = time.process_time()
    for r in range(a.rounds):
        keys = np.sort(rng.choice(10 * a.rows, a.rows, replace=False)).astype(np.int64)
        rows = {"k": keys, "v": np.full(keys.size, r, dtype=np.int64)}
        if a.cross_partition:
            rows["p"] = (keys + r) % 3  # each round moves every key it writes to another partition
        writer.write_arrow(pa.table(rows))
        committer.commit(writer.prepare_commit(), r + 1)
    cpu = time.process_time() - start
    tree = lake_assets.__file__.rsplit("/lake_assets/", 1)[0]
    print(f"{tree}: {a.rounds} rounds {cpu:.2f} s CPU; ledger looks {looks[1]}, {looks[0] * 1000:.1f} ms CPU "
          f"({100 * looks[0] / cpu:.2f}%)")


if __name__ == "__main__":
    main()

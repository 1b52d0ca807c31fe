"""CPU time of a ``postpone.merge-on-read`` batch read against its peers on the same table: a plain
read of a compacted copy (what the merge-on-read must return) and the postpone compaction itself
(what a reader would otherwise wait for). Alternating rounds, best ``time.process_time``.

    PYTHONPATH=. python bench/bench_postpone_merge_read.py [real_rows] [postponed_rows] [rounds]
"""

from __future__ import annotations

import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from lake_assets import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64())])


def batch(ids: np.ndarray, tag: str) -> pa.Table:
    return pa.table({"id": ids, "dt": np.where(ids % 2 == 0, "d1", "d2"),
                     "v": pa.array([f"{tag}{i}" for i in ids.tolist()]), "n": ids}, schema=SCHEMA)


def main() -> None:
    real_rows = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
    postponed_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    wh = tempfile.mkdtemp(prefix="bench-pmr-")
    try:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "4",
                                      "postpone.merge-on-read": "true"})
        t.write_arrow(batch(np.arange(real_rows), "a"))
        t.compact()
        rng = np.random.default_rng(1)
        # half updates of existing keys, half new keys, written by two writers
        ids = np.concatenate([rng.choice(real_rows, postponed_rows // 2, replace=False),
                              real_rows + np.arange(postponed_rows // 2)])
        rng.shuffle(ids)
        for part in np.array_split(ids, 2):
            t.write_arrow(batch(part, "b"))
        src = Path(wh) / "db.db" / "p"
        shutil.copytree(src, Path(wh) / "db.db" / "c")
        copy = cat.get_table("db.c")
        copy.update_schema().set_option("postpone.merge-on-read", "false").commit()
        copy = cat.get_table("db.c")
        compact_start = time.process_time()
        copy.compact()
        compact_s = time.process_time() - compact_start
        best = {"merge-on-read": float("inf"), "compacted plain read": float("inf")}
        rows = {}
        for _ in range(rounds):
            for name, table in (("merge-on-read", t), ("compacted plain read", copy)):
                start = time.process_time()
                out = table.to_arrow()
                best[name] = min(best[name], time.process_time() - start)
                rows[name] = out.num_rows
        assert rows["merge-on-read"] == rows["compacted plain read"] == real_rows + postponed_rows // 2
        print(f"real rows {real_rows}, postponed rows {postponed_rows}, result rows {rows['merge-on-read']}")
        for name, s in best.items():
            print(f"{name}: {s:.3f} s CPU ({rows[name] / s / 1e6:.2f} M rows/s)")
        print(f"postpone compaction (once): {compact_s:.3f} s CPU")
        print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    finally:
        shutil.rmtree(wh, ignore_errors=True)


if __name__ == "__main__":
    main()

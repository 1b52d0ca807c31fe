"""CPU cost of the keep mask's row count in deletion-vector compaction units (`VectorUpdate._kept_mask`).

The keep mask of a looked-up or rewritten file's old deletion vector is sized by the file's own
row count. It was taken by opening the file and parsing its footer in every unit ("open"); it is
now the footer a read parsed before, from the footer cache ("cached", `checked_row_count` with
``read_follows``). Two identical partial-update tables with deletion vectors (the engine merges
the old rows in, so every unit looks its keys up in the files above and sizes their masks) take
the same update rounds, interleaved and in alternating order in one process, one table with each
behaviour; reported: the CPU-time ratio cached/open of a round (its inline compaction included),
median and spread over the rounds, the data-file opens of the rounds (on an object store each is
a request), and whether both tables read the same rows.

    .venv/bin/python bench/bench_dv_kept_mask.py --rows 200000 --buckets 8 --rounds 12
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa

import lake_assets.ops.dv_compact as dv_compact
from lake_assets import Catalog
from lake_assets.io.local import LocalFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64())])


def _table(root: str, name: str, buckets: int, rows: int) -> Any:
    catalog = Catalog(root)
    if "db" not in catalog.list_databases():
        catalog.create_database("db")
    t = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id"],
                             options={"bucket": str(buckets), "deletion-vectors.enabled": "true",
                                      "merge-engine": "partial-update", "snapshot.num-retained.max": "1000"})
    ids = np.arange(rows)
    t.write_arrow(pa.table({"id": ids, "a": pa.array([f"a{i % 1000}" for i in range(rows)]), "b": ids}, schema=SCHEMA))
    return t


def _update(rng: np.random.Generator, rows: int, r: int) -> pa.Table:
    ids = np.sort(rng.choice(rows, rows // 50, replace=False))
    return pa.table({"id": ids, "a": pa.nulls(len(ids), pa.string()), "b": ids * 0 + r}, schema=SCHEMA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    cached = dv_compact.checked_row_count
    opened = lambda store, path, meta, **_: cached(store, path, meta)  # noqa: E731 - the unit before: an open
    ratios: list[float] = []
    totals = {"cached": 0.0, "open": 0.0}
    opens = {"cached": 0, "open": 0}
    real_open = LocalFileIO.open_input
    current = ["cached"]

    def counted(self: LocalFileIO, path: str, *a: Any, **k: Any) -> Any:
        opens[current[0]] += path.endswith(".parquet")
        return real_open(self, path, *a, **k)

    LocalFileIO.open_input = counted  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as root:
        tables = {"cached": _table(root, "cached", args.buckets, args.rows),
                  "open": _table(root, "open", args.buckets, args.rows)}
        for r in range(args.rounds):
            data = _update(np.random.default_rng(r), args.rows, r)
            cpu = {}
            for name in (("cached", "open") if r % 2 else ("open", "cached")):
                dv_compact.checked_row_count = cached if name == "cached" else opened  # type: ignore[assignment]
                current[0] = name
                start = time.process_time()
                tables[name].write_arrow(data)
                cpu[name] = time.process_time() - start
            dv_compact.checked_row_count = cached  # type: ignore[assignment]
            ratios.append(cpu["cached"] / cpu["open"])
            for k, v in cpu.items():
                totals[k] += v
        same = tables["cached"].to_arrow().sort_by("id").equals(tables["open"].to_arrow().sort_by("id"))
    print(json.dumps({"rounds": args.rounds, "cached_over_open_cpu_median": round(statistics.median(ratios), 3),
                      "spread": [round(min(ratios), 3), round(max(ratios), 3)], "same_rows": same,
                      "cpu_s": {k: round(v, 2) for k, v in totals.items()}, "data_file_opens": opens}))


if __name__ == "__main__":
    main()
